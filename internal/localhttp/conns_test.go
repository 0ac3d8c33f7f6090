package localhttp

import (
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// connSet drives a conns with connections of chosen users.
type connSet struct {
	t  *testing.T
	cs *conns
}

func newConnSet(t *testing.T, l Limits) *connSet {
	return &connSet{t: t, cs: newConns(l, nil, slog.New(slog.DiscardHandler), time.Now)}
}

// open admits a new connection of uid and returns it, the connection it
// shed (nil for none) and whether it was admitted.
func (s *connSet) open(uid int64) (c *conn, shed net.Conn, ok bool) {
	a, b := net.Pipe()
	s.t.Cleanup(func() { a.Close(); b.Close() })
	c = &conn{nc: a, owner: s.cs, uid: uid}
	shed, ok = s.cs.admit(c)
	return c, shed, ok
}

// TestConnLimits: the policy of Limits, one rule at a time.
func TestConnLimits(t *testing.T) {
	t.Run("a user past its cap sheds its own oldest", func(t *testing.T) {
		s := newConnSet(t, Limits{Conns: 10, Anonymous: 10, AnonymousPerUser: 2})
		first, _, _ := s.open(1)
		s.open(1)
		other, _, _ := s.open(2)
		_, shed, ok := s.open(1)
		if !ok || shed == nil || shed != first.nc {
			t.Fatalf("third of user 1: admitted %v, shed %v; want its first shed", ok, shed)
		}
		if s.cs.all[other.nc] == nil {
			t.Fatalf("user 2's connection was dropped")
		}
	})
	t.Run("past the anonymous cap the user with the most sheds", func(t *testing.T) {
		s := newConnSet(t, Limits{Conns: 10, Anonymous: 3, AnonymousPerUser: 3})
		s.open(2)
		first, _, _ := s.open(1)
		s.open(1)
		_, shed, ok := s.open(3)
		if !ok || shed == nil || shed != first.nc {
			t.Fatalf("a new user at the cap: admitted %v, shed %v; want user 1's first shed", ok, shed)
		}
	})
	t.Run("authenticated connections are never shed", func(t *testing.T) {
		s := newConnSet(t, Limits{Conns: 2, Anonymous: 2, AnonymousPerUser: 2})
		a, _, _ := s.open(1)
		s.cs.authenticate(a)
		b, _, _ := s.open(1)
		_, shed, ok := s.open(2)
		if !ok || shed == nil || shed != b.nc {
			t.Fatalf("at the connection cap: admitted %v, shed %v; want the anonymous one shed", ok, shed)
		}
		s.cs.authenticate(s.cs.anon[2].Front().Value.(*conn))
		if _, shed, ok := s.open(1); ok || shed != nil {
			t.Fatalf("with every connection authenticated: admitted %v, shed %v; want the new one refused", ok, shed)
		}
	})
	t.Run("a closed connection frees its place", func(t *testing.T) {
		s := newConnSet(t, Limits{Conns: 1, Anonymous: 1, AnonymousPerUser: 1})
		a, _, _ := s.open(1)
		s.cs.authenticate(a)
		s.cs.state(a.nc, http.StateClosed)
		if _, shed, ok := s.open(1); !ok || shed != nil {
			t.Fatalf("after a close: admitted %v, shed %v", ok, shed)
		}
		if len(s.cs.all) != 1 || s.cs.nAnon != 1 {
			t.Fatalf("%d connections, %d anonymous; want 1 and 1", len(s.cs.all), s.cs.nAnon)
		}
	})
}
