// Package node is the memmesh node: it wires storage, the search index and
// the node's identity together and implements the service API with its domain
// rules. It is the only package that knows all the parts.
//
// # Using a node
//
//	n, err := node.New(node.Config{Home: dir, Logger: log})
//	if err != nil { ... }
//	if err := n.Start(ctx); err != nil { ... }
//	defer n.Close()
//
//	res, err := n.Remember(ctx, api.RememberRequest{
//		Namespace: "myproject",
//		Content:   "Use pgx, not lib/pq: lib/pq is in maintenance mode.",
//		Kind:      "decision",
//		Tags:      []string{"db"},
//	})
//	// res.ID is "m-" + the new id; res.DuplicateOf is set when the same text
//	// already existed in the namespace, res.Similar lists close matches.
//
//	hits, err := n.Search(ctx, api.SearchRequest{Query: "postgres driver", Namespace: "myproject"})
//	m, err := n.Get(ctx, "m-k3j5x2ab") // full or short id
//	m, err = n.Update(ctx, m.ID, api.UpdateRequest{AddTags: []string{"decided"}})
//	m, err = n.Forget(ctx, m.ID) // archive: out of searches, kept
//	m, err = n.Delete(ctx, m.ID) // out of view on every node; Restore undoes it
//	p, err := n.Purge(ctx, m.ID) // erased on every node, for good
//
// # Rules
//
// Remember validates its input (content 1 byte to 1 MiB of UTF-8, namespace,
// tags and kind syntax, tier, confidence, TTL; package rules), scrubs secrets (Scrub) from
// content and title before anything is stored, returns the existing memory for
// an exact duplicate in the same namespace, reports near-duplicates (MinHash
// over words, confirmed by Jaccard similarity) as Similar, and extracts the
// files, URLs, packages and symbols the text mentions into touches
// (touches.Extract). Trust tiers set defaults: human memories do not expire,
// agent ones after 90 days, auto ones after 30; evergreen ones never. Expired,
// archived, compacted and deleted memories are out of searches and lists.
// Every error wraps one of ErrInvalid, ErrNotFound (ErrPurged for a purged
// memory), ErrAmbiguous or ErrClosed, and a rejected request changes nothing.
//
// # Data path
//
// A write builds an Automerge change (package crdt), materialises the
// document and commits document, record, index terms and digest in one synced
// Pebble batch (package storage); only then is it acknowledged. The search
// indexer tails storage's change log and applies changes to the bleve index
// in batches; a search first waits until the index has caught up with every
// durable change, so a node always finds what it acknowledged, and the index's
// own persistence stays off the write path. After a crash the same loop
// repairs the index from its persisted watermark. Reads use materialised
// records and never load Automerge documents; per-device access counts are
// local data that is never replicated.
//
// # Lifecycle
//
// RunLifecycle (lifecycle.go; on a schedule with Config.LifecycleInterval)
// derives, without writing a memory, what ages: staleness (Stale's rules),
// TTL expiry, confidence decay (Config.ConfidenceHalfLife) and maturity
// from local read counts (internal/aging, which the brief shares). Search ranks by its verdicts; Get shows a
// memory's reads, maturity and decayed confidence.
//
// # The brief
//
// Context (brief.go, asking package brief) gives what an agent should
// read first: every live memory of a namespace ranked
// from an in-memory index that follows the change log, cut to a budget
// counted with a real tokenizer on the text emitted:
//
//	b, err := n.Context(ctx, api.ContextRequest{Namespace: "myproject"})
//	fmt.Print(b.Markdown()) // b.Tokens is the o200k count of this text
//	b, err = n.Context(ctx, api.ContextRequest{Namespace: "myproject", Query: prompt})
//	// only the memories that match the prompt well, within 600 tokens
//
// # Symbols
//
// IndexSymbols (symbols.go) indexes the functions, types and methods of a
// working tree into local data (package symbols), parsing only the files
// changed since the last index; with Config.Symbols.Interval set, Start
// indexes every known tree again on that schedule. Symbols finds them by
// name or prefix; Where says where one is defined; Impact and Traverse
// take a symbol (code:NAME) as a start:
//
//	rep, err := n.IndexSymbols(ctx, api.SymbolsIndexRequest{Dir: "/src/app", Namespace: "app"}, nil)
//	locs, err := n.Symbols(ctx, api.SymbolsRequest{Query: "Store."}) // every method of Store
//	affected, err := n.Impact(ctx, api.ImpactRequest{Path: "code:validateToken"})
//
// # The mesh
//
// With Config.Mesh set, Start also joins the mesh (package mesh, wired in
// mesh.go): a QUIC endpoint (package transport) that admits only devices
// of the replicated device registry, memberlist over that endpoint for
// membership and failure detection, a pusher that sends every local commit
// to every live peer, and anti-entropy pulls on join, reconnection and
// every SyncInterval. Documents received from peers are validated, merged
// on every core and committed exactly like local writes (the mesh asks the
// node for their records through mesh.Host). Invite, Join, JoinAddr,
// Peers and MeshStatus delegate to the mesh, and Devices, Revoke and
// SetNamespace to its registry, which works without the mesh too
// (mesh.go, registry.go):
//
//	inv, err := a.Invite(ctx, time.Hour)     // on a member
//	res, err := b.Join(ctx, inv.Token)       // on the new machine
//	peers, err := a.Peers(ctx)               // alive, suspect, dead, ...
package node
