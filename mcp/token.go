package mcp

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenFile is the file, in the memmesh home, that holds the bearer token
// every request to MCP over HTTP must carry.
const TokenFile = "http.token"

// minTokenLen is the shortest token a server accepts.
const minTokenLen = 32

// LoadToken returns the token kept at path. When there is no file yet it
// makes one (mode 0600) with 32 random bytes in hex; callers that race
// all get the token of the first. It refuses a file that other users may
// read, or that holds no token.
func LoadToken(path string) (string, error) {
	tok, err := readToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	if err := createToken(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("mcp: create the HTTP token: %w", err)
	}
	return readToken(path)
}

// readToken reads and checks the token file.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("mcp: HTTP token: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("mcp: %s may be read by other users (mode %04o): run chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return "", fmt.Errorf("mcp: HTTP token: %w", err)
	}
	tok := strings.TrimSpace(string(data))
	if !validToken(tok) {
		return "", fmt.Errorf("mcp: %s holds no token (%d to 1024 visible ASCII characters); delete it and memmesh makes a new one", path, minTokenLen)
	}
	return tok, nil
}

// validToken reports whether tok can be a token: long enough, and
// visible ASCII, as an HTTP header value must be.
func validToken(tok string) bool {
	if len(tok) < minTokenLen {
		return false
	}
	for i := range len(tok) {
		if tok[i] <= ' ' || tok[i] > '~' {
			return false
		}
	}
	return true
}

// createToken writes a new token beside path and links it into place, so
// that the file appears whole or not at all and never replaces another.
func createToken(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".http.token-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(randomBytes(32)) + "\n")
	if err := errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

// randomBytes returns n bytes from crypto/rand, which never fails.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
