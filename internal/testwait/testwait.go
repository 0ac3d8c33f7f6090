// Package testwait bounds the waits of tests. A test waits for what it
// expects by progress (a condition, a message, a closed connection), and
// gives up only after Limit: far beyond what a slow, shared machine takes,
// so that a test fails for a hang, never because the machine is slow.
package testwait

import (
	"testing"
	"time"
)

// Limit bounds every wait of a test; it is not a performance assertion.
const Limit = 5 * time.Minute

// Until polls cond until it holds, and fails tb after Limit.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(Limit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not reached in %v: %s", Limit, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
