package e2e

import (
	"bytes"
	"compress/lzw"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	byteorder "encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memmesh/memmesh/transport"
)

// TestMeshHostileMember: a joined device turns hostile. With its valid
// keys it sends memberlist state bombs, then hundreds of push streams
// with a frame header announcing 17 MiB and nothing more, then hundreds
// of push and sync streams that send 1 MiB of such a frame, then streams
// that trickle a byte at a time, while an honest member keeps writing.
// The daemon it attacks stays under maxDaemonRSS at its peak throughout,
// and the honest member's writes reach it, those made while the slow
// streams are held included.
func TestMeshHostileMember(t *testing.T) {
	victim, honest, hostile := startMachine(t, 1, "victim"), startMachine(t, 2, "honest"), startMachine(t, 3, "hostile")
	var inv invitation
	okJSON(t, victim.home, &inv, "invite")
	ok(t, honest.home, "join", inv.Token)
	okJSON(t, victim.home, &inv, "invite")
	ok(t, hostile.home, "join", inv.Token)
	eventually(t, 30*time.Second, "the victim does not see both members alive", func() bool {
		states := victim.states(t)
		return states[honest.id] == "alive" && states[hostile.id] == "alive"
	})
	// The hostile device's daemon stops; its keys act for it.
	stopHome(t, hostile.home)
	ep, target := hostileEndpoint(t, hostile.home), inv.Addrs[0]
	r := &attackRun{t: t, pid: victim.serve.Process.Pid, victim: victim, honest: honest}

	r.under("state bombs", func(ctx context.Context) { stateBombs(ctx, ep, target) }, nil)
	r.under("header-only streams", func(ctx context.Context) {
		t.Logf("header-only push streams admitted: %d of 374", hugeFrames(ctx, ep, target, 374, 0, false))
	}, nil)
	r.under("huge frames", func(ctx context.Context) {
		t.Logf("push and sync streams with 1 MiB of a 17 MiB frame admitted: %d of 400", hugeFrames(ctx, ep, target, 400, 1<<20, true))
	}, nil)
	r.under("slow streams", func(ctx context.Context) { trickle(ctx, ep, target) }, r.arrived)
	eventually(t, 60*time.Second, "the honest member's writes do not reach the attacked daemon", r.arrived)
	peak, _ := peakRSS(t, r.pid)
	t.Logf("the attacked daemon's peak RSS: %d MiB", peak>>20)
}

// attackRun is a hostile member's attack on victim, with honest writing.
type attackRun struct {
	t              *testing.T
	pid            int
	victim, honest *machine
	wrote          []string
}

// under runs attack until it returns, or until done reports true, while
// the honest member writes a memory; it fails the test as soon as the
// victim's peak RSS is over maxDaemonRSS.
func (r *attackRun) under(name string, attack func(context.Context), done func() bool) {
	t := r.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	over := make(chan struct{})
	go func() {
		defer close(over)
		attack(ctx)
	}()
	wrote := false
	for {
		if peak, _ := peakRSS(t, r.pid); peak > maxDaemonRSS {
			cancel()
			<-over
			t.Fatalf("%s: the attacked daemon's peak RSS reached %d MiB, over %d MiB", name, peak>>20, maxDaemonRSS>>20)
		}
		select {
		case <-over:
			return
		default:
		}
		switch {
		case !wrote:
			var c captureOut
			okJSON(t, r.honest.home, &c, "capture", "--ns", "team", fmt.Sprintf("During the %s the deploy window is Tuesday", name))
			r.wrote, wrote = append(r.wrote, c.ID), true
		case done != nil && done():
			cancel()
		case ctx.Err() != nil:
			<-over
			t.Fatalf("%s: not over after 3 minutes", name)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// arrived reports whether every memory the honest member wrote is on the
// victim.
func (r *attackRun) arrived() bool {
	for _, id := range r.wrote {
		if mm(r.t, r.victim.home, "", "show", id).code != 0 {
			return false
		}
	}
	return true
}

// hostileEndpoint is a transport endpoint with the keys of the device at
// home, on 127.0.0.3.
func hostileEndpoint(t *testing.T, home string) *transport.Endpoint {
	t.Helper()
	key, cert := readPEM(t, filepath.Join(home, "identity.key")), readPEM(t, filepath.Join(home, "identity.crt"))
	k, err := x509.ParsePKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := transport.CertificateFromDER(cert, k.(ed25519.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := transport.Listen(transport.Config{
		Listen: "127.0.0.3:0", Key: k.(ed25519.PrivateKey), Cert: c,
		Authorize: func(string) error { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func readPEM(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: not PEM", path)
	}
	return block.Bytes
}

// open opens a stream, giving up after a few seconds (a peer at its
// stream limit makes an opener wait).
func open(ctx context.Context, ep *transport.Endpoint, target string, typ transport.StreamType) (*transport.Stream, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return ep.Open(ctx, target, typ)
}

// hugeFrames opens n push streams (and sync ones too, alternately, with
// sync), each with a frame header that announces 17 MiB followed by sent
// bytes of it, holding them open until the last is opened. It returns
// how many the target admitted.
func hugeFrames(ctx context.Context, ep *transport.Endpoint, target string, n, sent int, sync bool) int {
	frame := byteorder.BigEndian.AppendUint32(nil, transport.MaxFrame)
	frame = append(append(frame, transport.FrameDocs), make([]byte, sent)...)
	var held []*transport.Stream
	defer func() {
		for _, s := range held {
			s.Abort()
		}
	}()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		typ := transport.StreamPush
		if sync && i%2 == 1 {
			typ = transport.StreamSync
		}
		s, err := open(ctx, ep, target, typ)
		if err != nil {
			continue
		}
		if _, err := s.Write(frame); err != nil {
			s.Abort()
			continue
		}
		held = append(held, s)
	}
	return len(held)
}

// trickle opens streams of every member type that send a frame a byte
// each half second until ctx ends.
func trickle(ctx context.Context, ep *transport.Endpoint, target string) {
	var streams []*transport.Stream
	for _, typ := range []transport.StreamType{transport.StreamPush, transport.StreamSync, transport.StreamMembership} {
		for range 4 {
			if s, err := open(ctx, ep, target, typ); err == nil {
				streams = append(streams, s)
			}
		}
	}
	frame := append(byteorder.BigEndian.AppendUint32(nil, 1<<20), transport.FrameDocs)
	for i := 0; ctx.Err() == nil && len(streams) > 0; i++ {
		for _, s := range streams {
			s.Write([]byte{frame[min(i, len(frame)-1)]})
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	for _, s := range streams {
		s.Abort()
	}
}

// stateBombs sends memberlist messages that announce or unpack to tens of
// megabytes, 16 at a time, a few rounds.
func stateBombs(ctx context.Context, ep *transport.Endpoint, target string) {
	header := func(nodes, user uint32) []byte {
		b := []byte{6, 0x83, 0xa5, 'N', 'o', 'd', 'e', 's', 0xce}
		b = byteorder.BigEndian.AppendUint32(b, nodes)
		b = append(append(b, 0xac), "UserStateLen"...)
		b = byteorder.BigEndian.AppendUint32(append(b, 0xce), user)
		return append(append(b, 0xa4), "Join\xc3"...)
	}
	var z bytes.Buffer
	w := lzw.NewWriter(&z, lzw.LSB, 8)
	w.Write(header(0, 20<<20))
	w.Write(make([]byte, 20<<20))
	w.Close()
	packed := append([]byte{9, 0x82, 0xa4}, "Algo\x00\xa3Buf\xc6"...)
	packed = append(byteorder.BigEndian.AppendUint32(packed, uint32(z.Len())), z.Bytes()...)
	bombs := [][]byte{header(1<<20, 0), header(0, 20<<20), packed}
	for round := 0; round < 4 && ctx.Err() == nil; round++ {
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				s, err := open(ctx, ep, target, transport.StreamMembership)
				if err != nil {
					return
				}
				defer s.Abort()
				s.Write(bombs[i%len(bombs)])
				io.Copy(io.Discard, s) // until memberlist closes it
			})
		}
		wg.Wait()
	}
}
