package sessions

// SessionID is sessionID, for the tests that look a session up by the id
// a client gave it.
var SessionID = sessionID

// MaxSessionIDLen bounds a session id kept as the client gave it.
const MaxSessionIDLen = maxSessionIDLen
