import functools


class TokenStore:
    """Stores tokens."""

    def __init__(self):
        self.tokens = {}

    @functools.cache
    def lookup(self, key):
        def helper():
            return key
        return helper()


def validate_token(token):
    return bool(token)


async def refresh(token):
    return token
