// Package e2e holds end-to-end tests that drive the built memmesh binary the
// way a person or an agent does: real daemons on temporary homes, real
// Pebble, real search, real signals.
package e2e
