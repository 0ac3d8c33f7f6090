package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The identity files in a memmesh home, mode 0600: the Ed25519 private
// key (PKCS #8, PEM) and its self-signed certificate (PEM), which peers
// check at every connection.
const (
	IdentityFile    = "identity.key"
	certificateFile = "identity.crt"
)

// Identity is this machine's key pair, certificate and the device id
// derived from the key, as kept in its home.
type Identity struct {
	Key      ed25519.PrivateKey
	Cert     tls.Certificate
	DeviceID string
}

// LoadIdentity reads the key in dir or creates it, then reads or creates
// its certificate.
func LoadIdentity(dir string) (Identity, error) {
	id, err := loadOrCreateIdentity(dir)
	if err != nil {
		return Identity{}, err
	}
	path := filepath.Join(dir, certificateFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if id.Cert, err = Certificate(id.Key); err != nil {
			return Identity{}, err
		}
		pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.Cert.Certificate[0]})
		if err := writeFileSync(path, pemCert, 0o600); err != nil {
			return Identity{}, fmt.Errorf("write certificate: %w", err)
		}
		return id, nil
	}
	if err != nil {
		return Identity{}, fmt.Errorf("read certificate: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return Identity{}, fmt.Errorf("certificate %s: not a PEM certificate", path)
	}
	if id.Cert, err = CertificateFromDER(block.Bytes, id.Key); err != nil {
		return Identity{}, fmt.Errorf("certificate %s: %w", path, err)
	}
	return id, nil
}

// loadOrCreateIdentity reads the key in dir, creating one on first use.
func loadOrCreateIdentity(dir string) (Identity, error) {
	path := filepath.Join(dir, IdentityFile)
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
	return Identity{Key: key, DeviceID: DeviceID(key.Public().(ed25519.PublicKey))}, nil
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
	return Identity{Key: key, DeviceID: DeviceID(pub)}, nil
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
