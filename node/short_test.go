package node

import "testing"

// skipIfShort leaves a long test out of the quick tier (./test -short):
// ./test runs it.
func skipIfShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long: ./test runs it, ./test -short does not")
	}
}
