package transport

import (
	"bytes"
	"compress/lzw"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/memmesh/memmesh/internal/mutate"
)

// mp appends MessagePack, as memberlist's codec writes it.
type mp []byte

func (b mp) fixmap(n int) mp { return append(b, 0x80|byte(n)) }

func (b mp) str(s string) mp {
	if len(s) < 32 {
		return append(append(b, 0xa0|byte(len(s))), s...)
	}
	return append(binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(len(s))), s...)
}

func (b mp) bin(p []byte) mp {
	return append(binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(len(p))), p...)
}

func (b mp) uint(v uint64) mp {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), v)
}

func (b mp) bool(v bool) mp {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

// pushPull is a push-pull message with n node states and user state.
func pushPull(n int, user []byte) []byte {
	b := mp{mlPushPull}.fixmap(3).str("Nodes").uint(uint64(n)).str("UserStateLen").uint(uint64(len(user))).str("Join").bool(false)
	for i := range n {
		b = b.fixmap(7).str("Name").str(string(rune('A'+i))+"DEVICE").str("Addr").bin([]byte{127, 0, 0, 1}).
			str("Port").uint(7420).str("Meta").bin([]byte(`{"name":"laptop"}`)).str("Incarnation").uint(3).
			str("State").uint(0).str("Vsn").fixarray(1, 5, 2, 2, 5, 4)
	}
	return append(b, user...)
}

func (b mp) fixarray(vs ...byte) mp { return append(append(b, 0x90|byte(len(vs))), vs...) }

// compressed wraps a message as memberlist compresses it.
func compressed(msg []byte) []byte {
	var z bytes.Buffer
	w := lzw.NewWriter(&z, lzw.LSB, 8)
	w.Write(msg)
	w.Close()
	return mp{mlCompress}.fixmap(2).str("Algo").uint(0).str("Buf").bin(z.Bytes())
}

// bombs are membership messages that announce far more than they carry,
// or carry more than a mesh needs: each made memberlist allocate tens
// or hundreds of megabytes.
func bombs() map[string][]byte {
	header := func(nodes, user uint64) []byte {
		return mp{mlPushPull}.fixmap(3).str("Nodes").uint(nodes).str("UserStateLen").uint(user).str("Join").bool(true)
	}
	return map[string][]byte{
		"a million node states announced":    header(1<<20, 0),
		"20 MiB of user state announced":     header(0, 20<<20),
		"20 MiB of user state, compressed":   compressed(append(header(0, 20<<20), make([]byte, 20<<20)...)),
		"a node name of 4 GiB announced":     append(header(1, 0), 0x81, 0xa4, 'N', 'a', 'm', 'e', 0xdb, 0xff, 0xff, 0xff, 0xf0),
		"a user message of 20 MiB announced": mp{8}.fixmap(1).str("UserMsgLen").uint(20 << 20),
	}
}

// TestReadMembership: memberlist's messages pass whole (compressed ones
// decompressed); bombs are refused having read little of them.
func TestReadMembership(t *testing.T) {
	legit := pushPull(3, []byte("state"))
	ping := mp{mlPing}.fixmap(2).str("SeqNo").uint(9).str("Node").str("b")
	for name, tc := range map[string]struct{ in, want []byte }{
		"push-pull":            {legit, legit},
		"push-pull compressed": {compressed(legit), legit},
		"ping":                 {ping, ping},
		"ping, then more":      {append(bytes.Clone(ping), 1, 2, 3), ping},
	} {
		got, err := readMembership(slowly(tc.in))
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("%s: %x %v, want %x", name, got, err, tc.want)
		}
	}
	for name, in := range bombs() {
		if _, err := readMembership(bytes.NewReader(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := readMembership(bytes.NewReader(pushPull(maxMembershipNodes+1, nil))); !errors.Is(err, ErrMalformed) {
		t.Errorf("%d node states: %v, want ErrMalformed", maxMembershipNodes+1, err)
	}
}

// slowly returns b one byte per read, as a slow stream would.
func slowly(b []byte) io.Reader { return &piecesReader{r: bytes.NewReader(b), sizes: []byte{0}} }

// victim is a real memberlist whose streams come from a test.
type victim struct {
	ml      *memberlist.Memberlist
	streams chan net.Conn
}

func newVictim(tb testing.TB) *victim {
	v := &victim{streams: make(chan net.Conn)}
	conf := memberlist.DefaultLocalConfig()
	conf.Name = "victim"
	conf.Transport = v
	conf.LogOutput = io.Discard
	// No probes, gossip or push-pulls of its own: only what the test sends.
	conf.ProbeInterval, conf.GossipInterval, conf.PushPullInterval = 0, 0, 0
	conf.Alive = refuseAll{}
	ml, err := memberlist.Create(conf)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ml.Shutdown() })
	v.ml = ml
	return v
}

func (v *victim) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return net.IPv4(127, 0, 0, 1), 7420, nil
}
func (v *victim) WriteTo([]byte, string) (time.Time, error) { return time.Now(), nil }
func (v *victim) PacketCh() <-chan *memberlist.Packet       { return nil }
func (v *victim) DialTimeout(string, time.Duration) (net.Conn, error) {
	return nil, errors.New("no dialing")
}
func (v *victim) StreamCh() <-chan net.Conn { return v.streams }
func (v *victim) Shutdown() error           { return nil }

type refuseAll struct{}

func (refuseAll) NotifyAlive(*memberlist.Node) error { return errors.New("not a member") }

// serve hands data to memberlist as a stream through the transport's
// checks, reads its answer and returns once memberlist closed the stream.
func (v *victim) serve(tb testing.TB, data []byte) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := &pipeConn{r: inR, w: outW, closed: make(chan struct{})}
	go func() {
		inW.Write(data)
		inW.Close()
	}()
	go io.Copy(io.Discard, outR)
	v.streams <- &checkedConn{Conn: conn}
	select {
	case <-conn.closed:
	case <-time.After(time.Minute):
		tb.Fatal("memberlist did not close the stream")
	}
	inR.Close()
	outR.Close()
}

// pipeConn is a net.Conn made of two pipes.
type pipeConn struct {
	r      *io.PipeReader
	w      *io.PipeWriter
	once   sync.Once
	closed chan struct{}
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.w.Write(b) }
func (c *pipeConn) Close() error {
	c.once.Do(func() {
		c.r.Close()
		c.w.Close()
		close(c.closed)
	})
	return nil
}
func (c *pipeConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (c *pipeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)} }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// maxMembershipAlloc bounds what memberlist and the checks may allocate
// for one message: a few times maxMembershipBytes, never what a message
// announces.
const maxMembershipAlloc = 8 << 20

// FuzzMembership: any bytes, sent to a real memberlist as a membership
// stream through the transport's checks, cost at most maxMembershipAlloc
// and never crash it; what the checks let through is at most
// maxMembershipBytes and passes them again unchanged.
func FuzzMembership(f *testing.F) {
	seeds := [][]byte{
		pushPull(3, []byte("state")),
		compressed(pushPull(2, nil)),
		mp{mlPing}.fixmap(2).str("SeqNo").uint(9).str("Node").str("victim"),
		mp{mlAck}.fixmap(2).str("SeqNo").uint(9).str("Payload").bin(nil),
		mp{mlError}.fixmap(1).str("Error").str("no"),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	for _, b := range bombs() {
		f.Add(b)
	}
	mutate.Seeds(f, 300, seeds...)
	v := newVictim(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if msg, err := readMembership(bytes.NewReader(data)); err == nil {
			if len(msg) > maxMembershipBytes {
				t.Fatalf("let through a message of %d bytes", len(msg))
			}
			if again, err := readMembership(bytes.NewReader(msg)); err != nil || !bytes.Equal(again, msg) {
				t.Fatalf("what passed once does not pass again: %v", err)
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v.serve(t, data)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > maxMembershipAlloc {
			t.Fatalf("a membership stream of %d bytes made memberlist allocate %d bytes", len(data), got)
		}
	})
}

// TestMembershipBombsOverQUIC: a member sends memberlist state bombs on
// membership streams, and answers a push-pull with them; the peer's
// memberlist refuses them all having allocated little, and still admits
// an honest member.
func TestMembershipBombsOverQUIC(t *testing.T) {
	m := &members{set: map[string]bool{}}
	attacker, b, c := newEndpoint(t, m), newEndpoint(t, m), newEndpoint(t, m)
	m.add(attacker.Device(), b.Device(), c.Device())
	ctx := ctxT(t)
	lists := make(map[*Endpoint]*memberlist.Memberlist)
	for _, e := range []*Endpoint{b, c} {
		conf := memberlist.DefaultLocalConfig()
		conf.Name = e.Device()
		conf.Transport = e.Memberlist(e.Addr())
		conf.UDPBufferSize = MaxPacket
		conf.LogOutput = io.Discard
		ml, err := memberlist.Create(conf)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ml.Shutdown() })
		lists[e] = ml
	}

	all := bombs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for name, bomb := range all {
		s, err := attacker.Open(ctx, b.Addr().String(), StreamMembership)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.Write(bomb)
		io.Copy(io.Discard, s) // until memberlist closes it
		s.Close()
	}
	// b pulls state from the attacker, which answers with a bomb.
	for _, bomb := range [][]byte{all["a million node states announced"], all["20 MiB of user state, compressed"]} {
		go func() {
			select {
			case conn := <-attacker.mstreams:
				conn.Write(bomb)
				io.Copy(io.Discard, conn)
				conn.Close()
			case <-ctx.Done():
			}
		}()
		if _, err := lists[b].Join([]string{attacker.Addr().String()}); err == nil {
			t.Error("b took a bomb for the attacker's state")
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*maxMembershipAlloc {
		t.Fatalf("the bombs made the process allocate %d bytes", got)
	}
	if _, err := lists[c].Join([]string{b.Addr().String()}); err != nil {
		t.Fatalf("an honest member joins after the bombs: %v", err)
	}
	waitFor(t, func() bool { return lists[b].NumMembers() == 2 })
}
