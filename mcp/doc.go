// Package mcp serves memmesh to AI agents over the Model Context Protocol,
// with github.com/mark3labs/mcp-go.
//
// NewServer builds the server over a Service: *node.Node in the daemon,
// *web.Client in `memmesh mcp`, which serves stdio and talks to the daemon.
// NewHTTPServer serves it over streamable HTTP at /mcp, for clients on
// this machine only (loopback listener, Host and Origin checked against
// DNS rebinding) that hold the home's bearer token (LoadToken), with
// bounded bodies and read times. recall answers excerpts of long memories
// (api.SearchHit); get answers them whole.
//
// Tools (each with an input schema and behaviour hints; a result is a
// text rendering for the agent, with the same data as structured content;
// context answers its Markdown alone, and recall holds its budget on both
// forms, since some clients show the model the structured content instead).
// The whole tools/list stays under 12,000 characters, since every session
// of every agent reads it: tools that are one idea are one tool with a
// mode, descriptions say what an agent needs to pick the tool, and there
// are no output schemas.
//
//	remember       store a memory (content, title, namespace, kind, tags, tier, confidence, ttl, evergreen)
//	recall         search (query; namespace or "*", tags, kind, statuses, tiers, since, until, limit, explain)
//	get            one memory by full or short id
//	update         change a memory's content, title, namespace, kind, tags, confidence, ttl, evergreen or status;
//	               status active restores an archived, compacted or deleted memory
//	forget         archive a memory; with hard, purge it (erase it everywhere, for good)
//	context        the brief of a namespace within a token budget
//	link           relate two memories, or a memory and a file:, code: or url: artefact; remove deletes the link
//	traverse       mode links: follow relations from a memory or artefact (depth, direction, rels);
//	               mode impact: the memories a file, directory or symbol (code:NAME) affects
//	review         check stale, analyze, reflect or compact: the upkeep of a namespace (all reads)
//	compact_apply  replace memories with a summary
//	status         version, device, counts, and the mesh's peers: state, last sync, documents behind
//
// Resources:
//
//	memmesh://context        the brief of the default namespace (JSON)
//	memmesh://stats          version, device and counts (JSON)
//	memmesh://stale          stale memories of the default namespace (JSON)
//	memmesh://memory/{id}    one memory (JSON)
//
// Prompts:
//
//	capture          save what is worth keeping from the session, one idea per memory
//	recall_context   search a topic and give the results as quoted background
//	session_handoff  write and save a summary for the next session
//
// Failures of a tool call are tool results with isError set and a message
// that says what to do instead; nothing is changed. A memory written
// through MCP records the client (clientInfo name/version) as its agent and
// the MCP session as its session, with the agent trust tier unless the
// client asks for auto.
//
// Memories go back to agents as data, never as instructions: every output
// that holds memories starts with a notice saying so, and the text
// rendering puts each memory in a delimited block with its provenance:
//
//	<memory id="m-k3j5x2ab" title="Postgres driver" namespace="backend" kind="decision" tier="agent"
//	        confidence="0.70" status="active" device="ABC1234" agent="claude-code/1.0" updated="2026-01-31T12:00:00Z">
//	Use pgx, not lib/pq: lib/pq is in maintenance mode.
//	</memory>
//
// Memory tags inside stored text are escaped, so that a memory can neither
// close its block nor forge another.
package mcp
