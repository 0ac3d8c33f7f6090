//go:build !unix

package storage

// device cannot tell devices apart here: mountPoint names the store's
// directory instead.
func device(string) (uint64, bool) { return 0, false }
