package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base32"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// deviceEncoding renders device ids: unpadded standard base32 (52 characters).
var deviceEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DeviceID derives a device id from a public key: the base32 form of its
// SHA-256 hash, so that a device id cannot be claimed without the key.
func DeviceID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return deviceEncoding.EncodeToString(sum[:])
}

// deviceIDLen is the length of every device id.
const deviceIDLen = 52

// ValidDeviceID reports whether s has the form of a device id.
func ValidDeviceID(s string) bool {
	if len(s) != deviceIDLen {
		return false
	}
	b, err := deviceEncoding.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// Certificate makes the self-signed certificate of key. Its subject is the
// device id; peers check the signature and derive the id from the key, so
// nothing else in it matters.
func Certificate(key ed25519.PrivateKey) (tls.Certificate, error) {
	pub := key.Public().(ed25519.PublicKey)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: DeviceID(pub)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(100, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		// A CA flag lets the certificate verify its own signature.
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: create certificate: %w", err)
	}
	return CertificateFromDER(der, key)
}

// CertificateFromDER pairs a stored certificate with its key, checking that
// they belong together.
func CertificateFromDER(der []byte, key ed25519.PrivateKey) (tls.Certificate, error) {
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: certificate: %w", err)
	}
	pub, ok := leaf.PublicKey.(ed25519.PublicKey)
	if !ok || !pub.Equal(key.Public()) {
		return tls.Certificate{}, errors.New("transport: certificate does not match the identity key")
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// peerDevice checks a peer's certificate chain (one self-signed Ed25519
// certificate) and returns the device id it proves.
func peerDevice(rawCerts [][]byte) (string, error) {
	if len(rawCerts) != 1 {
		return "", fmt.Errorf("%w: want one certificate, got %d", ErrBadCertificate, len(rawCerts))
	}
	cert, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadCertificate, err)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return "", fmt.Errorf("%w: not an Ed25519 key", ErrBadCertificate)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		return "", fmt.Errorf("%w: not self-signed: %w", ErrBadCertificate, err)
	}
	return DeviceID(pub), nil
}
