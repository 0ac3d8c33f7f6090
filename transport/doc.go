// Package transport is memmesh's network layer: one UDP port per node
// carrying QUIC (TLS 1.3, mutual certificate checks), memberlist's packets
// and streams, and typed streams of length-prefixed frames for sync, push
// and join. It knows nothing of memories: the node decides who is a member
// (Config.Authorize) and what the frames mean beyond their encoding.
//
// # Identity
//
// A device's identity is an Ed25519 key and a self-signed certificate for
// it; its device id is the unpadded base32 SHA-256 of the public key (52
// characters). Each side of a connection checks the other's certificate
// signature and derives the id from the key, so an id cannot be claimed
// without its key. LoadIdentity keeps the key and certificate in a home's
// files, made on first use.
//
// # Connections
//
// A connection negotiates one of two ALPN protocols:
//
//	memmesh/1       members only: Authorize is asked at the TLS handshake,
//	                and a refusal fails the handshake before any stream.
//	memmesh-join/1  any device with a valid certificate, so that a new
//	                device can present an invite token; the connection
//	                carries exactly one stream, of type join, and nothing
//	                else (no datagrams). The dialer checks that the server
//	                is the device named in the token.
//
// The endpoint listens and dials from the same socket, so a peer's address
// is the same in both directions and one connection per pair serves both.
//
// # Streams
//
// The opener of a stream writes a hello; the other side answers with a
// hello reply, and only then do frames flow:
//
//	hello:  +------+-----------+-----+-----+-------+-----------+
//	        | type | "MMSH"    | min | max | idlen | device id |
//	        | 1    | 4         | 1   | 1   | 1     | idlen     |
//	        +------+-----------+-----+-----+-------+-----------+
//	reply:  +-----------+--------+---------+--------+-----------+
//	        | "MMSH"    | status | version | msglen | message   |
//	        | 4         | 1      | 1       | 1      | msglen    |
//	        +-----------+--------+---------+--------+-----------+
//
// type is a StreamType (1 membership, 2 sync, 3 push, 4 join; only ever
// appended to). min..max is the opener's protocol version range; the reply
// carries the highest common version (status 0) or a refusal (status 1)
// with its reason. A hello whose device id is not the one the certificate
// proves, an unknown type, or a member stream from a device that is no
// longer authorised is refused and logged.
//
// # What a peer can make an endpoint hold
//
// A member's keys may be stolen, so a member is bounded like a stranger
// (limits.go). Each figure comes from what the mesh uses:
//
//   - Streams of one type per device, over all its connections: 2 sync (a
//     node pulls from one peer at a time; the next pull may open before
//     the last one's server closed), 2 push (one sender per peer; a push it
//     gave up on may still be applied when the retry comes) and 4
//     membership (memberlist's push-pull every few seconds, a join and a
//     fallback probe may overlap). A stream over its cap is refused after
//     its hello, before any frame is read: a refusal reply naming
//     ErrBusy, and STOP_SENDING with code 2. Join streams are not counted
//     per device, whose keys cost nothing to make: at most 8 join
//     connections are open at once, each closed unless its one stream
//     comes within the hello's 5 s.
//   - Connections per device: 4 (one per pair, two while both dial at
//     once, and a restarted peer's stale one until the stateless reset
//     closes it). A fifth closes the device's oldest, with code 3.
//   - Per connection, QUIC's own bounds: 16 bidirectional streams open,
//     hellos included, no unidirectional ones; flow control windows of
//     4 MiB per stream and 8 MiB per connection bound the bytes that
//     arrived and wait to be read.
//   - Time: a hello must arrive within 5 s. Then a read or a write fails
//     once 30 s pass with no byte read and no 256 KiB written on the
//     stream, in either direction: a pull that keeps moving is never cut
//     (a puller's wants may wait while it reads and applies documents),
//     while a peer that stops sending mid-frame or between frames, or
//     stops reading, is dropped. A deadline the user sets applies as
//     well, the earlier first.
//   - Bytes: a frame's buffer grows with the bytes that arrive (below),
//     so one device makes an endpoint hold at most its 4 sync and push
//     streams' frames, each at most four times what was actually sent
//     plus 64 KiB (a MaxFrame frame sent whole: 33 MiB while its buffer
//     grows last), plus the flow control windows of its connections.
//
// # Frames
//
//	+----------------------+------+---------------------+
//	| length (big-endian)  | type | payload             |
//	| 4                    | 1    | length-1            |
//	+----------------------+------+---------------------+
//
// length counts the type byte and the payload. It is checked against the
// cap (MaxFrame between members, MaxJoinFrame on join streams), and the
// payload's buffer is not allocated at that length: it starts at 64 KiB
// at most and grows fourfold as bytes arrive, so that a frame costs at
// most four times what its sender actually sent, whatever it announced. Frame types and
// payload encodings are in wire.go:
// unsigned varints, length-prefixed strings, counts checked against the
// bytes left before anything is allocated, and trailing bytes ignored.
//
// # Datagrams
//
// memberlist's packets travel as QUIC datagrams on mesh connections, one
// leading byte (1, membership) then the packet; memberlist's streams are
// streams of type membership. See Memberlist.
//
// # memberlist's stream messages
//
// memberlist allocates what a stream message announces (a push-pull's
// node count, its user state's length, a compressed message's output)
// before the bytes arrive. Each side of a membership stream carries one
// message, so the transport reads it first (membership.go): at most
// 256 KiB, compressed or not; a push-pull of at most 256 node states
// (a mesh of a few dozen devices sends a few dozen KiB); every
// MessagePack length and count checked against the bytes that follow,
// the push-pull header's and the compressed envelope's fields read
// strictly (known keys, each once, integers); a compressed message
// decompressed here, to at most 256 KiB. memberlist then reads only that
// message, uncompressed. Types the mesh does not use (reliable user
// messages, labels, encryption) are refused.
package transport
