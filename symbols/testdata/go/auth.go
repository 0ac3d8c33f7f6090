package auth

import "errors"

// Token is a bearer token.
type Token struct {
	Value string
}

// Validator checks tokens.
type Validator interface {
	Validate(t Token) error
}

type Claims map[string]string

type Store[K comparable] struct{ items map[K]Token }

// ValidateToken checks a token.
func ValidateToken(t Token) error {
	if t.Value == "" {
		return errors.New("empty")
	}
	return nil
}

func (t *Token) Refresh() {}

func (s Store[K]) Get(k K) Token { return s.items[k] }
