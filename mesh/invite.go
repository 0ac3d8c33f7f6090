package mesh

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/storage"
	"github.com/memmesh/memmesh/transport"
)

// The form of an invite token.
const (
	tokenPrefix  = "mmj1"
	tokenVersion = 1
)

// tokenEncoding is lowercase base32: easy to copy, no padding.
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// token is a one-time invitation: where the inviting member is, who it is,
// and a secret the joiner proves it holds.
type token struct {
	Inviter string // device id
	ID      [16]byte
	Secret  [32]byte
	Expires time.Time
	Addrs   []string
}

// The token, before base32 and its prefix:
//
//	version(1) inviter(32, the device id's hash) id(16) secret(32)
//	expires(8, Unix seconds, big-endian) naddrs(1) {len(1) addr}...
func (t *token) String() string {
	inviter, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(t.Inviter)
	b := []byte{tokenVersion}
	b = append(b, inviter...)
	b = append(b, t.ID[:]...)
	b = append(b, t.Secret[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(t.Expires.Unix()))
	b = append(b, byte(len(t.Addrs)))
	for _, a := range t.Addrs {
		b = append(b, byte(len(a)))
		b = append(b, a...)
	}
	return tokenPrefix + tokenEncoding.EncodeToString(b)
}

func parseToken(s string) (token, error) {
	bad := func(why string) (token, error) {
		return token{}, api.Invalidf("invite token: %s (copy the whole token `memmesh invite` printed)", why)
	}
	s = strings.TrimSpace(s)
	body, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return bad("not a memmesh invite token")
	}
	b, err := tokenEncoding.DecodeString(body)
	if err != nil {
		return bad("damaged")
	}
	if len(b) < 1+32+16+32+8+1 || b[0] != tokenVersion {
		return bad("damaged or from another version")
	}
	var t token
	t.Inviter = base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[1:33])
	copy(t.ID[:], b[33:49])
	copy(t.Secret[:], b[49:81])
	t.Expires = time.Unix(int64(binary.BigEndian.Uint64(b[81:89])), 0).UTC()
	rest := b[90:]
	for range int(b[89]) {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return bad("damaged")
		}
		t.Addrs = append(t.Addrs, string(rest[1:1+rest[0]]))
		rest = rest[1+rest[0]:]
	}
	if len(t.Addrs) == 0 {
		return bad("no address")
	}
	return t, nil
}

// proof is what a joiner sends to show it holds the token's secret,
// bound to its own device id.
func proof(secret [32]byte, joiner string) [32]byte {
	mac := hmac.New(sha256.New, secret[:])
	mac.Write([]byte("memmesh join\x00" + joiner))
	return [32]byte(mac.Sum(nil))
}

// invite is an invitation as the inviting node stores it (local data).
type invite struct {
	Secret  []byte    `json:"secret"`
	Expires time.Time `json:"expires"`
	UsedBy  string    `json:"used_by,omitempty"`
}

// Invite creates a one-time token another machine passes to Join. It is
// valid for ttl (default one hour, at most a week) and only on this node.
func (m *Mesh) Invite(ctx context.Context, ttl time.Duration) (api.Invitation, error) {
	if ttl == 0 {
		ttl = api.DefaultInviteTTL
	}
	if ttl < time.Minute || ttl > api.MaxInviteTTL {
		return api.Invitation{}, api.Invalidf("invite ttl %v: give 1m to %v", ttl, api.MaxInviteTTL)
	}
	if err := m.ensureSelf(); err != nil {
		return api.Invitation{}, err
	}
	t := token{Inviter: m.self, Expires: m.clock.Now().Add(ttl).Truncate(time.Second), Addrs: transport.LocalAddrs(m.ep.Addr(), m.advertise)}
	rand.Read(t.ID[:])
	rand.Read(t.Secret[:])
	data, err := json.Marshal(invite{Secret: t.Secret[:], Expires: t.Expires})
	if err != nil {
		return api.Invitation{}, err
	}
	if err := m.store.PutLocalDurable(localInvite+hex.EncodeToString(t.ID[:]), data); err != nil {
		if errors.Is(err, storage.ErrDiskFull) {
			return api.Invitation{}, err // its message says all the user needs
		}
		return api.Invitation{}, fmt.Errorf("save invite: %w", err)
	}
	return api.Invitation{Token: t.String(), Expires: t.Expires, Addrs: t.Addrs}, nil
}

// ensureSelf adds this device to the registry if it is not there yet (a
// node that has never invited nor joined has no registry).
func (m *Mesh) ensureSelf() error {
	self := m.self
	m.mu.Lock()
	_, ok := m.devices[self]
	m.mu.Unlock()
	if ok {
		return nil
	}
	_, err := m.registry.AddDevice(self, m.cfg.Name, self)
	return err
}

// serveJoin admits a device that proves an unused, unexpired invite: it is
// added to the registry, and receives the registry and the members'
// addresses.
func (m *Mesh) serveJoin(s *transport.Stream) error {
	defer s.Close()
	refuse := func(err error) error {
		s.WriteFrame(transport.FrameError, []byte(err.Error()))
		s.CloseWrite()
		drain(s)
		return err
	}
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, p, err := s.ReadFrame(transport.MaxJoinFrame)
	if err != nil {
		return fmt.Errorf("read join request: %w", err)
	}
	if typ != transport.FrameJoin {
		return refuse(fmt.Errorf("%w: expected a join request, got frame type %d", transport.ErrMalformed, typ))
	}
	req, err := transport.DecodeJoin(p)
	if err != nil {
		return refuse(err)
	}
	name := peerDeviceName(req.Name, s.Peer[:8])
	if err := m.useInvite(req, s.Peer, func() error {
		_, err := m.registry.AddDevice(s.Peer, name, m.self)
		return err
	}); err != nil {
		return refuse(err)
	}
	m.log.Info("device joined", "device", s.Peer, "name", name, "addr", s.Addr.String())
	addrs := []string{m.advertise.String()}
	for _, member := range m.memberAddrs() {
		if len(addrs) < 32 {
			addrs = append(addrs, member.addr)
		}
	}
	if err := s.WriteFrame(transport.FrameJoined, transport.AppendJoined(nil, &transport.JoinReply{Addrs: addrs})); err != nil {
		return err
	}
	var docs []transport.Entry
	err = m.store.All(storage.KindMesh, func(rec storage.Record) error {
		doc, err := m.store.GetDoc(storage.KindMesh, rec.ID)
		if err != nil {
			return err
		}
		e := entryOf(rec)
		e.Doc = doc
		docs = append(docs, e)
		return nil
	})
	if err == nil {
		err = transport.SendDocs(s, docs)
	}
	if err == nil {
		err = s.CloseWrite()
	}
	drain(s)
	return err
}

// drain waits (briefly) for the peer to close its side, so that closing
// the join connection does not cut off what was just sent.
func drain(s *transport.Stream) {
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.Copy(io.Discard, io.LimitReader(s, transport.MaxJoinFrame))
}

// useInvite checks a join request against the stored invite, marks the
// invite used, durably, and then admits the device. When admit refuses,
// the invite is given back for the device it was meant for (a crash in
// between leaves it used: it fails closed).
func (m *Mesh) useInvite(req transport.JoinRequest, joiner string, admit func() error) error {
	m.inviteMu.Lock()
	defer m.inviteMu.Unlock()
	key := localInvite + hex.EncodeToString(req.Token[:])
	data, err := m.store.GetLocal(key)
	if notFound(err) {
		return errors.New("unknown invite token (was it made by this machine?)")
	}
	if err != nil {
		return err
	}
	var inv invite
	if err := json.Unmarshal(data, &inv); err != nil || len(inv.Secret) != 32 {
		return fmt.Errorf("stored invite unreadable: %v", err)
	}
	want := proof([32]byte(inv.Secret), joiner)
	switch {
	case !hmac.Equal(want[:], req.Proof[:]):
		return errors.New("wrong invite secret")
	case inv.UsedBy != "":
		return errors.New("invite token already used; make a new one with 'memmesh invite'")
	case m.clock.Now().After(inv.Expires):
		return fmt.Errorf("invite token expired at %s; make a new one with 'memmesh invite'", inv.Expires.Format(time.RFC3339))
	}
	inv.UsedBy = joiner
	used, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	if err := m.store.PutLocalDurable(key, used); err != nil {
		return err
	}
	if err := admit(); err != nil {
		if perr := m.store.PutLocalDurable(key, data); perr != nil {
			m.log.Warn("cannot give the invite back after a refused join", "err", perr)
		}
		return err
	}
	return nil
}

// Join uses an invite token: it connects to the inviting member, checks
// that it is the device the token names, proves the token's secret, and
// receives the device registry. Then it joins the membership and starts
// syncing. No private key leaves this machine.
func (m *Mesh) Join(ctx context.Context, tok string) (api.JoinResult, error) {
	t, err := parseToken(tok)
	if err != nil {
		return api.JoinResult{}, err
	}
	if t.Inviter == m.self {
		return api.JoinResult{}, api.Invalidf("invite token: it was made by this device; use it on another machine")
	}
	if m.clock.Now().After(t.Expires) {
		return api.JoinResult{}, api.Invalidf("invite token expired at %s; make a new one with `memmesh invite`", t.Expires.Format(time.RFC3339))
	}
	var s *transport.Stream
	var errs []error
	for _, addr := range t.Addrs {
		s, err = m.ep.DialJoin(ctx, addr, t.Inviter)
		if err == nil {
			break
		}
		errs = append(errs, err)
	}
	if s == nil {
		return api.JoinResult{}, fmt.Errorf("join: the inviting member did not answer: %w", errors.Join(errs...))
	}
	defer s.Close()
	res := api.JoinResult{Inviter: t.Inviter, Addr: s.Addr.String()}
	req := transport.JoinRequest{Token: t.ID, Proof: proof(t.Secret, m.self), Name: m.cfg.Name}
	if err := s.WriteFrame(transport.FrameJoin, transport.AppendJoin(nil, &req)); err != nil {
		return res, fmt.Errorf("join: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		s.SetReadDeadline(dl)
	} else {
		s.SetReadDeadline(time.Now().Add(30 * time.Second))
	}
	typ, p, err := s.ReadFrame(transport.MaxFrame)
	if err != nil {
		return res, fmt.Errorf("join: %w", err)
	}
	switch typ {
	case transport.FrameError:
		return res, api.Invalidf("the inviting member refused the join: %s", string(p))
	case transport.FrameJoined:
	default:
		return res, fmt.Errorf("join: %w: frame type %d", transport.ErrMalformed, typ)
	}
	reply, err := transport.DecodeJoined(p)
	if err != nil {
		return res, fmt.Errorf("join: %w", err)
	}
	// The registry follows; only mesh records are accepted here.
	for {
		typ, p, err := s.ReadFrame(transport.MaxFrame)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return res, fmt.Errorf("join: registry: %w", err)
		}
		if typ != transport.FrameDocs {
			return res, fmt.Errorf("join: %w: frame type %d", transport.ErrMalformed, typ)
		}
		docs, err := transport.DecodeEntries(p)
		if err != nil {
			return res, fmt.Errorf("join: registry: %w", err)
		}
		docs = slices.DeleteFunc(docs, func(e transport.Entry) bool { return storage.Kind(e.Kind) != storage.KindMesh })
		if err := m.Apply(t.Inviter, docs); err != nil {
			return res, fmt.Errorf("join: registry: %w", err)
		}
	}
	s.CloseWrite()
	if err := m.Authorize(t.Inviter); err != nil {
		return res, fmt.Errorf("join: the inviting member sent a registry without itself: %w", err)
	}
	m.mu.Lock()
	res.Devices = len(m.devices)
	m.mu.Unlock()
	m.remember(t.Inviter, res.Addr)
	m.saveKnown()
	var addrs []string
	for _, a := range reply.Addrs {
		if _, _, err := net.SplitHostPort(a); err == nil {
			addrs = append(addrs, a)
		}
	}
	res.Members = addrs
	// Admitted: from here on the retry loop reconnects by itself, so a
	// membership join that fails now (a busy member) is no error.
	for attempt := 0; attempt < 3 && m.joinAddrs(addrs) == 0; attempt++ {
		m.log.Warn("no member answered the membership join yet; retrying", "addrs", addrs)
		select {
		case <-ctx.Done():
			return res, nil
		case <-m.clock.After(time.Second):
		}
	}
	m.kickPull(t.Inviter)
	return res, nil
}

// JoinAddr contacts a member at addr, for a device that is already in the
// registry (a re-join after an address change, or a new peer address).
func (m *Mesh) JoinAddr(ctx context.Context, addr string) (int, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return 0, api.Invalidf("address %q: want host:port (or pass an invite token)", addr)
	}
	k := m.joinAddrs([]string{addr})
	if k == 0 {
		return 0, fmt.Errorf("no member answered at %s: check that it runs `memmesh serve` and that this device is in its registry (join with an invite token first)", addr)
	}
	return k, nil
}
