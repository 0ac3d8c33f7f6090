package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/model"
)

// Bounds of the event stream.
const (
	clientBuffer   = 256              // events queued per client; past it the client is dropped
	maxStreams     = 64               // open streams at most (several tabs of several sessions)
	pingInterval   = 15 * time.Second // a ping keeps proxies and the browser from closing the stream
	reconnectDelay = time.Second      // how long a browser waits to reconnect a broken stream (its own default is 3 s)
	writeTimeout   = 10 * time.Second // a client that takes longer to take an event is dropped
	changesPerRead = 1000
)

// event is one server-sent event.
type event struct {
	name string
	data []byte
}

// MemoryEvent is the data of a "memory" event.
type MemoryEvent struct {
	ID        string       `json:"id"`
	Namespace string       `json:"namespace"`
	Title     string       `json:"title"`
	Kind      string       `json:"kind"`
	Status    model.Status `json:"status"`
	UpdatedAt time.Time    `json:"updated_at,omitzero"`
	Device    string       `json:"device"` // of the newest revision
	Change    string       `json:"change"` // created, updated, merged (from a peer) or deleted
}

// hub reads the node's changes while a client listens and fans them out.
// It never blocks the node: a client whose buffer is full is dropped (its
// page reconnects and reloads).
type hub struct {
	svc          Service
	log          *slog.Logger
	poll, peerIv time.Duration

	mu      sync.Mutex
	clients map[*listener]struct{}
	stop    context.CancelFunc // of the running reader; nil when none runs
	done    chan struct{}      // closed when the running reader returns
	closed  chan struct{}      // closed by close
}

// listener is one event stream's queue.
type listener struct {
	ch      chan event
	dropped chan struct{}
}

func newHub(svc Service, log *slog.Logger, poll, peerIv time.Duration) *hub {
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	if peerIv <= 0 {
		peerIv = DefaultPeerInterval
	}
	return &hub{svc: svc, log: log, poll: poll, peerIv: peerIv, clients: map[*listener]struct{}{}, closed: make(chan struct{})}
}

// subscribe adds a listener, starting the reader for the first one; nil
// when maxStreams are open.
func (h *hub) subscribe() *listener {
	l := &listener{ch: make(chan event, clientBuffer), dropped: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) >= maxStreams {
		return nil
	}
	h.clients[l] = struct{}{}
	if h.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.stop, h.done = cancel, make(chan struct{})
		go h.run(ctx, h.done)
	}
	return l
}

// unsubscribe removes l, stopping the reader after the last one.
func (h *hub) unsubscribe(l *listener) {
	h.mu.Lock()
	delete(h.clients, l)
	var done chan struct{}
	if len(h.clients) == 0 && h.stop != nil {
		h.stop()
		done, h.stop = h.done, nil
	}
	h.mu.Unlock()
	if done != nil {
		<-done
	}
}

// close ends every stream and the reader.
func (h *hub) close() {
	h.mu.Lock()
	select {
	case <-h.closed:
	default:
		close(h.closed)
	}
	h.mu.Unlock()
}

// publish queues ev for every listener, dropping those that are full.
func (h *hub) publish(ev event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.clients {
		select {
		case l.ch <- ev:
		default:
			h.log.Warn("dropped a slow dashboard event stream", "queued", clientBuffer)
			close(l.dropped)
			delete(h.clients, l)
		}
	}
}

// run reads the change log every poll interval and the peers every peer
// interval until ctx ends.
func (h *hub) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	// A position past the log's end answers the end.
	res, err := h.svc.Changes(ctx, api.ChangesRequest{After: math.MaxUint64, Limit: 1})
	if err != nil {
		h.log.Error("read the change log's end", "err", err)
		return
	}
	pos := res.Next
	peers := map[string][]byte{}
	h.diffPeers(ctx, peers)
	tick, peerTick := time.NewTicker(h.poll), time.NewTicker(h.peerIv)
	defer tick.Stop()
	defer peerTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			pos = h.readChanges(ctx, pos)
		case <-peerTick.C:
			h.diffPeers(ctx, peers)
		}
	}
}

// readChanges publishes what changed after pos and returns the new
// position.
func (h *hub) readChanges(ctx context.Context, pos uint64) uint64 {
	for {
		res, err := h.svc.Changes(ctx, api.ChangesRequest{After: pos, Limit: changesPerRead})
		if err != nil {
			if ctx.Err() == nil {
				h.log.Error("read the change log", "err", err)
			}
			return pos
		}
		self := h.svc.DeviceID()
		for _, m := range res.Memories {
			h.send("memory", memoryEvent(m, self))
		}
		for _, e := range res.Edges {
			h.send("edge", e)
		}
		for _, id := range res.Purged {
			h.send("memory", MemoryEvent{ID: id, Status: model.StatusDeleted, Change: "deleted"})
		}
		pos = res.Next
		if !res.More {
			return pos
		}
	}
}

// memoryEvent describes a changed memory; self is this node's device.
func memoryEvent(m api.Memory, self string) MemoryEvent {
	ev := MemoryEvent{ID: m.ID, Namespace: m.Namespace, Title: m.Title, Kind: m.Kind, Status: m.Status,
		UpdatedAt: m.Provenance.UpdatedAt, Device: m.Provenance.Device}
	if k := len(m.Revisions); k > 0 {
		ev.Device = m.Revisions[k-1].Device
	}
	switch {
	case m.Status == model.StatusDeleted:
		ev.Change = "deleted"
	case ev.Device != "" && ev.Device != self:
		ev.Change = "merged"
	case len(m.Revisions) <= 1 && m.Provenance.UpdatedAt.Equal(m.Provenance.CreatedAt):
		ev.Change = "created"
	default:
		ev.Change = "updated"
	}
	return ev
}

// diffPeers publishes the peers whose row changed since last.
func (h *hub) diffPeers(ctx context.Context, last map[string][]byte) {
	peers, err := h.svc.Peers(ctx)
	if err != nil {
		if !errors.Is(err, api.ErrNoMesh) && ctx.Err() == nil {
			h.log.Error("read the peers", "err", err)
		}
		return
	}
	for _, p := range peers {
		data, err := json.Marshal(p)
		if err != nil {
			continue
		}
		if !bytes.Equal(last[p.Device], data) {
			last[p.Device] = data
			h.publish(event{name: "peer", data: data})
		}
	}
}

// send publishes v as JSON.
func (h *hub) send(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		h.log.Error("encode an event", "event", name, "err", err)
		return
	}
	h.publish(event{name: name, data: data})
}

// serve streams events to one client until it leaves, falls behind or the
// handler closes.
func (h *hub) serve(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	l := h.subscribe()
	if l == nil {
		http.Error(w, fmt.Sprintf("Service Unavailable: %d event streams are open already; close a dashboard tab", maxStreams), http.StatusServiceUnavailable)
		return
	}
	defer h.unsubscribe(l)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: %d\n", reconnectDelay.Milliseconds())
	if err := writeEvent(w, rc, event{name: "ping", data: []byte("{}")}); err != nil {
		return
	}
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	for {
		var ev event
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-l.dropped:
			return
		case <-ping.C:
			ev = event{name: "ping", data: []byte("{}")}
		case ev = <-l.ch:
		}
		if err := writeEvent(w, rc, ev); err != nil {
			return
		}
	}
}

// writeEvent writes and flushes one event within writeTimeout.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, ev event) error {
	rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data); err != nil {
		return err
	}
	return rc.Flush()
}
