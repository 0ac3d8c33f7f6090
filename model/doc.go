// Package model holds the plain values memmesh stores and shares: a
// memory with its revisions and provenance, an edge, a mesh record (a
// device of the registry or a namespace's settings), and the statuses,
// trust tiers and sync policies they take. Package crdt converts them to
// and from Automerge documents; search, graph, node and the front ends
// use them without linking Automerge. It imports nothing of memmesh.
package model
