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
// without its key.
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
// at most and doubles as bytes arrive, so that a frame costs at most twice
// what its sender actually sent, whatever it announced. Frame types and
// payload encodings are in wire.go:
// unsigned varints, length-prefixed strings, counts checked against the
// bytes left before anything is allocated, and trailing bytes ignored.
//
// # Datagrams
//
// memberlist's packets travel as QUIC datagrams on mesh connections, one
// leading byte (1, membership) then the packet; memberlist's streams are
// streams of type membership. See Memberlist.
package transport
