class Session {
  constructor(user) {
    this.user = user;
  }

  expire() {
    const inner = () => 1;
    return inner();
  }
}

function validateToken(token) {
  return token !== "";
}

function* tokens() {
  yield 1;
}

const hashToken = function (token) {
  return token;
};

module.exports = { Session, validateToken };
