// Package mesh is a node's part in the mesh of a user's machines:
// membership (hashicorp/memberlist over the QUIC endpoint of package
// transport), pushes of local changes to every live peer, anti-entropy
// pulls, the adaptation of the node's store to the sync protocol
// (transport.Replica: what to offer, send and apply, and the replication
// policy), the device registry (Registry writes its records, the
// namespace settings and revocations; the running mesh follows them and
// decides who may connect), revocation (judged from what each revoker
// held of the revoked device's work, see revocation.go; what a revoked
// device made beyond it is refused and swept away, see sweep.go; a device
// held for revoked appeals, see appeal.go), and invites.
//
// The node creates a Mesh with New, over the consumer-side interfaces
// Store (the change log, digest, documents and local data) and Host (the
// node's rules for records, its write locks, its erasures), then Starts
// it. The node makes the Registry whether or not the mesh runs: its
// records replicate like memories, and a running mesh follows them and the
// ones its peers send.
//
// Scheduling reads time from Config.Clock (the anti-entropy and retry
// tickers, the waits between joins, the interval between pulls back,
// the times kept of peers and invites), so that tests and a simulation
// drive it without sleeping; network deadlines and memberlist's timers
// use the system's clock.
//
// Each loop is a thin driver of a step (serve a stream, pull from a peer,
// queue new changes for the live peers, send a queued batch) over a
// Network (the QUIC endpoint) and Members (memberlist). A mesh whose
// Config sets both runs no loop: the caller runs the steps (see Serve,
// PullFrom, QueuePushes, NextPush, PushTo, Kicked), which is how the
// node's deterministic simulation drives real nodes from one goroutine.
package mesh
