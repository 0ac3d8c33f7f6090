package api

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/memmesh/memmesh/internal/secrets"
)

// Errors returned by the service API. Callers test them with errors.Is; the
// wrapped message says what was wrong and what to do instead.
var (
	// ErrInvalid reports input that breaks a rule; nothing was changed.
	ErrInvalid = errors.New("invalid input")
	// ErrNotFound reports a reference that matches no memory.
	ErrNotFound = errors.New("not found")
	// ErrPurged reports a memory that was purged: erased on every machine.
	// Errors that match it match ErrNotFound too, and say when the memory
	// was purged and by which device.
	ErrPurged = fmt.Errorf("purged: %w", ErrNotFound)
	// ErrAmbiguous reports a short id that matches several memories.
	ErrAmbiguous = errors.New("ambiguous id")
	// ErrClosed reports a call on a node that has been closed.
	ErrClosed = errors.New("node closed")
	// ErrNoMesh reports a mesh operation on a node that runs without the
	// mesh.
	ErrNoMesh = errors.New("the mesh is not running on this node (the daemon runs with --no-mesh, or its UDP port was taken: see its log)")
	// ErrDiskFull reports a write refused because the disk of the home has
	// less free space than the node keeps in reserve (Config.MinFreeSpace);
	// nothing was changed, reads still work, and writes succeed again once
	// space is freed. The error says how much is free and needed.
	ErrDiskFull = errors.New("disk full")
)

// Invalidf returns an ErrInvalid error; see InputError.
func Invalidf(format string, args ...any) error {
	return InputError(ErrInvalid, format, args...)
}

// InputError wraps sentinel with a message about what a person, agent or
// peer gave. Its string arguments, which quote that input, are shown as
// Echo shows them (bounded, without secrets): error messages reach
// terminals, agents and logs.
func InputError(sentinel error, format string, args ...any) error {
	args = slices.Clone(args)
	for i, a := range args {
		if v := reflect.ValueOf(a); v.Kind() == reflect.String {
			args[i] = Echo(v.String())
		}
	}
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// maxEcho bounds the bytes of one input that an error message quotes.
const maxEcho = 160

// Echo returns s as an error message quotes what it was given, for %s,
// %v and %q: its secrets redacted (before the cut, since a secret cut
// short is no longer found), and, past maxEcho bytes, its start with an
// ellipsis and its length: "abc…" (61440 bytes). Every message that
// quotes input quotes it through Echo (InputError does it for its string
// arguments), so that an echo is bounded and holds no secret.
func Echo(s string) fmt.Formatter { return echo(s) }

type echo string

func (e echo) Format(f fmt.State, verb rune) {
	s, _ := secrets.Scrub(string(e))
	more := ""
	if len(s) > maxEcho {
		cut := maxEcho
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, more = s[:cut]+"…", fmt.Sprintf(" (%d bytes)", len(e))
	}
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	io.WriteString(f, s+more)
}
