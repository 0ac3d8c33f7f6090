package api

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Cursor is a place in a list of memories, which is ordered by update
// time, newest first, and among memories updated in the same instant by
// id, last first: a page that starts after it neither repeats nor skips
// memories that share the update time of the page's boundary.
type Cursor struct {
	Updated time.Time
	ID      string
}

// maxCursorLen bounds a list cursor before it is decoded.
const maxCursorLen = 128

// EncodeCursor writes a place in a list (a Cursor: an update time and a
// memory id) as an opaque token for ListRequest.Cursor.
func EncodeCursor(c Cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Updated.UnixNano(), 10) + "." + c.ID))
}

// DecodeCursor reads a token EncodeCursor wrote; anything else is
// ErrInvalid.
func DecodeCursor(s string) (Cursor, error) {
	bad := func() (Cursor, error) {
		return Cursor{}, Invalidf("cursor %q: not a cursor of this list; use the next cursor a page returned, or none to start from the newest", clipped(s))
	}
	if len(s) > maxCursorLen {
		return bad()
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad()
	}
	at, id, ok := strings.Cut(string(raw), ".")
	ns, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || ns < 0 || !cursorID(id) {
		return bad()
	}
	return Cursor{Updated: time.Unix(0, ns).UTC(), ID: id}, nil
}

// cursorID reports whether id can be a memory's full id: lower-case
// base32, as crdt makes them.
func cursorID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if (r < 'a' || r > 'z') && (r < '2' || r > '7') {
			return false
		}
	}
	return true
}

// clipped shortens s for an error message.
func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
