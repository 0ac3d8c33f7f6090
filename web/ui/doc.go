// Package ui is memmesh's web dashboard: the app shell and its pages,
// plain ES modules and CSS embedded in the binary (static/, no build
// step), the JSON API of package web mounted under /ui/api for them, and
// a server-sent-events stream of the node's changes. The daemon serves it
// on its loopback HTTP listener beside /mcp.
//
// Routes:
//
//	GET  /                      the shell (index.html) for every page path
//	GET  /static/...            embedded files (ETag, Cache-Control: no-cache)
//	GET  /ui/login?code=CODE    exchanges a one-time code for a session cookie; 303 to /
//	POST /ui/logout             ends the session
//	GET  /ui/api/session        {"csrf", "device", "version", "namespaces"}
//	GET  /ui/api/events         text/event-stream: memory, edge, peer and ping events
//	ANY  /ui/api/v1/...         package web's API (e.g. POST /ui/api/v1/search)
//
// Security. Every request must name this machine (Host a loopback name
// with the listener's port; Origin, when set, a page on this machine: 403
// otherwise), as for /mcp. `memmesh ui` asks the daemon, over its unix
// socket, for a one-time code (32 random bytes, single use, valid 60 s);
// /ui/login exchanges it for the cookie memmesh_session_PORT (HttpOnly,
// SameSite=Strict, 12 h). A browser sends its cookies for 127.0.0.1 to
// every port, another user's web server's too: a session is bound to the
// listener's port and to the local user that owns the browser's socket,
// and its cookie presented by another user ends it. Sessions live in the
// daemon's memory only: a restart of the daemon logs every browser out. Without a session, pages
// redirect to /ui/login, which says to run `memmesh ui`, and API calls get
// 401; a script may instead send the HTTP token (Authorization: Bearer).
// Every call other than GET or HEAD with a session must carry the header
// X-CSRF-Token with the session's token, and an Origin, when set, equal to
// the dashboard's own. Every response carries a strict
// Content-Security-Policy (no inline script or style), nosniff and
// no-referrer; API answers are never cached. Bodies are bounded as by
// package web (8 MiB, 30 s).
package ui
