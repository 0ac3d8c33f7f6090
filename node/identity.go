package node

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base32"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// identityFile holds the node's Ed25519 private key (PKCS #8, PEM), mode 0600.
const identityFile = "identity.key"

// Identity is this machine's key pair and the device id derived from it.
type Identity struct {
	Key      ed25519.PrivateKey
	DeviceID string
}

var deviceEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// deviceIDFor derives a device id from a public key: the base32 form of its
// SHA-256 hash, so that a device id cannot be claimed without the key.
func deviceIDFor(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return deviceEncoding.EncodeToString(sum[:])
}

// loadOrCreateIdentity reads the key in dir, creating one on first use.
func loadOrCreateIdentity(dir string) (Identity, error) {
	path := filepath.Join(dir, identityFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createIdentity(path)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("read identity: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return Identity{}, fmt.Errorf("identity %s: not a PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return Identity{}, fmt.Errorf("identity %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return Identity{}, fmt.Errorf("identity %s: not an Ed25519 key", path)
	}
	return Identity{Key: key, DeviceID: deviceIDFor(key.Public().(ed25519.PublicKey))}, nil
}

func createIdentity(path string) (Identity, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Identity{}, fmt.Errorf("generate identity: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Identity{}, fmt.Errorf("encode identity: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := writeFileSync(path, data, 0o600); err != nil {
		return Identity{}, fmt.Errorf("write identity: %w", err)
	}
	return Identity{Key: key, DeviceID: deviceIDFor(pub)}, nil
}

// writeFileSync writes data to path atomically and durably: a synced
// temporary file renamed into place, then the directory synced.
func writeFileSync(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
