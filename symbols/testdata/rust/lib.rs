pub struct Token {
    value: String,
}

pub enum Scope {
    Read,
    Write,
}

pub trait Validator {
    fn validate(&self, token: &Token) -> bool;
}

pub type Claims = std::collections::HashMap<String, String>;

impl Token {
    pub fn new(value: String) -> Self {
        Token { value }
    }
}

impl Validator for Token {
    fn validate(&self, token: &Token) -> bool {
        !token.value.is_empty()
    }
}

impl<T> Wrapper<T> {
    fn unwrap_it(self) -> T {
        self.0
    }
}

pub struct Wrapper<T>(T);

pub fn validate_token(token: &Token) -> bool {
    fn helper() -> bool {
        true
    }
    helper() && !token.value.is_empty()
}

impl<'a> Validator for &'a Wrapper<u8> {
    fn validate(&self, _token: &Token) -> bool {
        true
    }
}
