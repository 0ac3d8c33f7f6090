package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/memmesh/memmesh/api"
)

// maxRequestBody caps request bodies, import excepted: a memory of the
// largest content, escaped.
const maxRequestBody = 8 << 20

// streamedPaths are the routes whose body is a stream of any length,
// read as it arrives: their body is not capped, and it times out only
// when no data comes for Timeouts.Body.
var streamedPaths = map[string]bool{"/v1/import": true}

// Timeouts bound how long the API waits on a client, so that a client
// that stalls holds nothing for long.
type Timeouts struct {
	Header time.Duration // to read a request's headers
	Body   time.Duration // to read a whole capped body; between two reads of a streamed one
	Idle   time.Duration // a kept-alive connection between requests
}

// DefaultTimeouts are the daemon's.
var DefaultTimeouts = Timeouts{Header: 10 * time.Second, Body: 30 * time.Second, Idle: 2 * time.Minute}

// Server returns an HTTP server for the API that bounds every read from
// its clients by t.
func (a *API) Server(t Timeouts) *http.Server {
	return &http.Server{
		Handler:           a.Handler(t),
		ReadHeaderTimeout: t.Header,
		IdleTimeout:       t.Idle,
	}
}

// Handler returns the API as a handler that bounds the reads of request
// bodies by t.Body, for a server of its caller's (the dashboard's).
func (a *API) Handler(t Timeouts) http.Handler {
	a.bodyTimeout = t.Body
	return a
}

// limitBody refuses, with 413, a body announced larger than the cap, and
// puts a read deadline on the body. It reports whether to go on.
func (a *API) limitBody(w http.ResponseWriter, r *http.Request) bool {
	streamed := streamedPaths[r.URL.Path]
	if !streamed && r.ContentLength > maxRequestBody {
		a.tooLarge(w, r.ContentLength)
		return false
	}
	if a.bodyTimeout <= 0 || r.Body == nil || r.Body == http.NoBody {
		return true
	}
	b := &deadlineBody{ReadCloser: r.Body, rc: http.NewResponseController(w)}
	if streamed {
		b.idle = a.bodyTimeout
	} else {
		b.rc.SetReadDeadline(time.Now().Add(a.bodyTimeout))
	}
	r.Body = b
	return true
}

// tooLarge answers a body of size bytes (-1: unknown) that passes the cap.
func (a *API) tooLarge(w http.ResponseWriter, size int64) {
	msg := fmt.Sprintf("request body is over %d bytes: at most %d (8 MiB) are allowed", maxRequestBody, maxRequestBody)
	if size >= 0 {
		msg = fmt.Sprintf("request body is %d bytes: at most %d (8 MiB) are allowed", size, maxRequestBody)
	}
	WriteJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: msg, Code: "invalid"})
}

// bodyError answers a failure to read a request body: too large, too
// slow, or else malformed.
func (a *API) bodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		a.tooLarge(w, -1)
	case errors.Is(err, os.ErrDeadlineExceeded):
		WriteJSON(w, http.StatusRequestTimeout, apiError{Error: fmt.Sprintf("the request body did not arrive within %s", a.bodyTimeout), Code: "invalid"})
	default:
		// The decoder's message may quote the body (an unknown field's
		// name): it is quoted as any input is.
		a.fail(w, api.Invalidf("%s", err.Error()))
	}
}

// deadlineBody bounds the time a request body takes to arrive. Without
// idle, the deadline set when the request started covers the whole body;
// with idle, each read must come within idle of the previous one (a
// stream). Once the whole body is read, the deadline is lifted: net/http
// cancels a request whose connection times out after its body, and a call
// may run long. After an error it stays, so that the server, discarding
// the rest of a stalled body, gives up at once.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.idle > 0 {
		b.rc.SetReadDeadline(time.Now().Add(b.idle))
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
