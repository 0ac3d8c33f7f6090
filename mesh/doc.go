// Package mesh is a node's part in the mesh of a user's machines:
// membership (hashicorp/memberlist over the QUIC endpoint of package
// transport), pushes of local changes to every live peer, anti-entropy
// pulls, the adaptation of the node's store to the sync protocol
// (transport.Replica: what to offer, send and apply, and the replication
// policy), the device registry (Registry writes its records and the
// namespace settings; the running mesh follows them and decides who may
// connect), and invites.
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
package mesh
