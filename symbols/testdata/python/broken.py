def before_the_error():
    pass

def broken(:
    pass

class AfterTheError:
    def still_found(self):
        pass
