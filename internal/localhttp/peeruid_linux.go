package localhttp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// sock_diag (linux/sock_diag.h, linux/inet_diag.h): one request names a
// TCP socket by its four-tuple and the kernel answers with, among other
// things, the user that owns it. The lookup is exact (no dump of every
// socket), so its cost does not grow with the machine's connections.
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	diagReqLen       = 56 // struct inet_diag_req_v2
	diagMsgUIDOffset = 64 // of idiag_uid in struct inet_diag_msg
	diagTimeout      = time.Second
)

// peerUID returns the user that owns the other end of c, a loopback TCP
// connection: the socket whose source is c's remote address and whose
// destination is c's local one.
func peerUID(c net.Conn) (uint32, bool) {
	local, ok1 := c.LocalAddr().(*net.TCPAddr)
	remote, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, false
	}
	uid, err := socketUID(remote.AddrPort(), local.AddrPort())
	return uid, err == nil
}

// socketUID asks the kernel for the owner of the TCP socket from src to
// dst.
func socketUID(src, dst netip.AddrPort) (uint32, error) {
	src = netip.AddrPortFrom(src.Addr().Unmap(), src.Port())
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, syscall.NETLINK_INET_DIAG)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	defer syscall.Close(fd)
	tv := syscall.NsecToTimeval(diagTimeout.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	if err := syscall.Sendto(fd, diagRequest(src, dst), 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 512)
	n, _, err := syscall.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("sock_diag: %w", err)
	}
	return diagUID(buf[:n])
}

// diagRequest is a netlink message asking for the TCP socket from src to
// dst, in any state.
func diagRequest(src, dst netip.AddrPort) []byte {
	b := make([]byte, syscall.SizeofNlMsghdr+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], sockDiagByFamily)
	ne.PutUint16(b[6:], syscall.NLM_F_REQUEST)
	req := b[syscall.SizeofNlMsghdr:]
	req[0] = syscall.AF_INET6
	if src.Addr().Is4() {
		req[0] = syscall.AF_INET
	}
	req[1] = syscall.IPPROTO_TCP
	ne.PutUint32(req[4:], ^uint32(0)) // every state
	id := req[8:]                     // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], src.Port())
	binary.BigEndian.PutUint16(id[2:], dst.Port())
	s, d := src.Addr().AsSlice(), dst.Addr().AsSlice()
	copy(id[4:20], s)
	copy(id[20:36], d)
	ne.PutUint32(id[40:], ^uint32(0)) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], ^uint32(0))
	return b
}

// diagUID reads the owner from the kernel's answer to diagRequest.
func diagUID(b []byte) (uint32, error) {
	if len(b) < syscall.SizeofNlMsghdr {
		return 0, errors.New("sock_diag: short answer")
	}
	ne := binary.NativeEndian
	switch typ := ne.Uint16(b[4:]); typ {
	case syscall.NLMSG_ERROR:
		if len(b) >= syscall.SizeofNlMsghdr+4 {
			if code := int32(ne.Uint32(b[syscall.SizeofNlMsghdr:])); code < 0 {
				return 0, fmt.Errorf("sock_diag: %w", syscall.Errno(-code))
			}
		}
		return 0, errors.New("sock_diag: error answer")
	case sockDiagByFamily:
		msg := b[syscall.SizeofNlMsghdr:]
		if len(msg) < diagMsgUIDOffset+4 {
			return 0, errors.New("sock_diag: short answer")
		}
		return ne.Uint32(msg[diagMsgUIDOffset:]), nil
	default:
		return 0, fmt.Errorf("sock_diag: answer of type %d", typ)
	}
}
