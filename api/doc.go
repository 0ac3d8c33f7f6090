// Package api holds the types of memmesh's service: the requests and
// results of every call (remember, search, the graph, the lifecycle, the
// brief and its rendering, export and import, the mesh), the errors the
// calls return and the limits they hold input to. node implements the
// service; its front ends (mcp, web and its client, cmd/memmesh) use these
// types and declare, each for itself, the interface of the calls it makes,
// so that they do not link what node links (Pebble, QUIC, memberlist,
// Automerge).
package api
