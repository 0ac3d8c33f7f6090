package transport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadIdentityKeepsTheKey: the first load makes a key and its
// certificate, readable by the user only; the next loads the same device;
// a key file that is not a key is an error that names it, and is left as
// it was.
func TestLoadIdentityKeepsTheKey(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{IdentityFile, certificateFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", name, fi, err)
		}
	}
	again, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.DeviceID != first.DeviceID || !again.Key.Equal(first.Key) || string(again.Cert.Certificate[0]) != string(first.Cert.Certificate[0]) {
		t.Fatalf("loaded again: device %s, want %s with the same key and certificate", again.DeviceID, first.DeviceID)
	}
	if !ValidDeviceID(first.DeviceID) {
		t.Errorf("device id %q", first.DeviceID)
	}
	bad := filepath.Join(dir, IdentityFile)
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(dir); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a key file that is no key: %v, want an error naming %s", err, bad)
	}
	if data, _ := os.ReadFile(bad); string(data) != "not a key" {
		t.Errorf("the bad key file was changed to %q", data)
	}
}

// TestLoadIdentityRefusesAForeignCertificate: a certificate that is not
// the key's is refused rather than served.
func TestLoadIdentityRefusesAForeignCertificate(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if _, err := LoadIdentity(a); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(b); err != nil {
		t.Fatal(err)
	}
	cert, err := os.ReadFile(filepath.Join(b, certificateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, certificateFile), cert, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIdentity(a); err == nil {
		t.Fatal("a certificate of another key was accepted")
	}
}
