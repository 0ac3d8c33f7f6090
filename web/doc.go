// Package web is memmesh's local HTTP API: JSON over HTTP, served by the
// daemon on its unix socket ($MEMMESH_HOME/memmesh.sock, mode 0600) for the
// CLI and local tools, and Client, the Go client the CLI uses. No Client
// call hangs: it fails with ErrTimeout when the daemon shows no sign of
// life for the client's timeout (ClientOptions).
//
// Routes (all JSON unless noted):
//
//	GET    /v1/health                 version, device id and pid of the daemon
//	POST   /v1/memories               remember (api.RememberRequest)
//	GET    /v1/memories               list, newest first (?ns= &tag= &kind= &status= &tier= &device= &since= &until=
//	                                  &limit= &cursor=); a full page's Next-Cursor header is the cursor of the next
//	                                  (opaque: the last memory's update time and id; a malformed one is a 400)
//	GET    /v1/memories/{ref}         get one memory by full or short id
//	PATCH  /v1/memories/{ref}         update (api.UpdateRequest)
//	POST   /v1/memories/{ref}/forget  archive
//	POST   /v1/memories/{ref}/restore back to active (from archived, stale or compacted)
//	DELETE /v1/memories/{ref}         delete (tombstone)
//	POST   /v1/search                 search (api.SearchRequest; device: an id, a unique prefix or a name)
//	GET    /v1/stats                  counts
//	GET    /v1/export                 every memory as JSON Lines (application/x-ndjson)
//	POST   /v1/import                 JSON Lines body; all or nothing
//	POST   /v1/edges                  link (api.LinkRequest)
//	POST   /v1/edges/unlink           delete an edge ({"from", "rel", "to"})
//	POST   /v1/edges/invalidate       end an edge's validity now ({"from", "rel", "to"})
//	POST   /v1/traverse               breadth-first walk (api.TraverseRequest)
//	POST   /v1/impact                 memories a file or symbol affects (api.ImpactRequest)
//	POST   /v1/symbols                symbols by name or prefix (api.SymbolsRequest)
//	GET    /v1/symbols/trees          the working trees indexed
//	POST   /v1/symbols/index          index a tree now (api.SymbolsIndexRequest); JSON lines:
//	                                  {"progress":...} while it runs, then {"report":...} or {"error","code"}
//	GET    /v1/doctor                 cycles in acyclic relations, sync conflicts
//	GET    /v1/embed/status           how far the vectors of search by meaning are (api.EmbedStatus)
//	POST   /v1/embed/reindex          make the vectors again, in the background (api.EmbedStatus)
//	POST   /v1/lifecycle              run a lifecycle pass now (api.LifecycleReport)
//	POST   /v1/compact                clusters of stale memories to compact (api.CompactRequest)
//	POST   /v1/compact/apply          replace memories with a summary (api.CompactApplyRequest)
//	POST   /v1/stale                  memories that may no longer hold (api.StaleRequest)
//	POST   /v1/git/check              check a namespace's git trees now or in the background (api.GitCheckRequest)
//	POST   /v1/analyze                god nodes, bridges, PageRank, gaps (api.AnalyzeRequest)
//	POST   /v1/reflect                unlinked memories with candidate targets (api.ReflectRequest)
//	POST   /v1/edges/list             live edges at many endpoints (api.EdgesRequest)
//	POST   /v1/changes                memories, edges and erasures changed after a change-log position (api.ChangesRequest)
//	POST   /v1/context                a namespace's brief (api.ContextRequest)
//	POST   /v1/context/text           the brief as an agent reads it, with its tokens (BriefText)
//	POST   /v1/sessions               agent sessions of every machine, newest first (api.SessionsRequest)
//	GET    /v1/sessions/{ref}         one session, with its turns when they are on this machine
//	POST   /v1/sessions/search        turns of this machine's sessions (api.SessionSearchRequest)
//	POST   /v1/sessions/ingest        read transcripts, now or in the background (api.IngestRequest)
//	POST   /v1/mesh/invite            a one-time invite token ({"ttl": "1h"}; 1m to 7d)
//	POST   /v1/mesh/join              join a mesh ({"token"})
//	POST   /v1/mesh/rejoin            contact a member at host:port ({"addr"})
//	GET    /v1/mesh/devices           the device registry
//	POST   /v1/mesh/revoke            revoke a device ({"device": id, id prefix or name})
//	GET    /v1/mesh/peers             the other devices and their state
//	GET    /v1/mesh/status            this node's part in the mesh
//	POST   /v1/ns/set                 namespace settings: sync, stale_after (api.NamespaceChange)
//	POST   /v1/ui/login               a one-time dashboard login link (UILogin; unix socket only)
//	POST   /v1/shutdown               stop the daemon cleanly ({"before"}: the request lapses after)
//
// Request bodies are capped at 8 MiB, announced or read (413), except an
// import's, which streams. The server drops a client that does not send
// its headers within 10 s, a capped body within 30 s, or the next part of
// an import's body within 30 s of the last (408 when it can still answer),
// and closes connections idle for 2 minutes; a call is never cut while it
// runs (see Timeouts).
//
// The device filter of a list or a search (device) keeps the memories a
// device wrote, in their provenance or in any revision: a device id, a
// unique prefix of one in any case, or a name of the registry; a device
// that wrote nothing here is not_found, a prefix of several ambiguous.
//
// Errors are {"error": message, "code": code} with code one of invalid,
// not_found, ambiguous, unavailable, no_mesh (a mesh call on a node that runs
// without the mesh; status 409) and internal; Client turns them back into
// errors that match node's sentinel errors with errors.Is.
package web
