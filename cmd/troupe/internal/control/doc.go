// Package control is the daemon's control socket: the protocol (one JSON
// Request line, one response line; a chat request turns the connection
// into a line stream), the server (Listen, Server.Close), the client
// (Dial, Call), the results of the requests as JSON (results.go: IDResult,
// PeerInfo, ...; also what --json prints), and the HTTP side of the
// socket, where a connection that does not start with '{' is served by
// the mesh view's handler. It also
// holds the small HTTP listener the daemon uses for -metrics and -ui
// (ServeHTTP, ServeMetrics).
//
// A Server owns its listener, its connections and the goroutines that
// serve them; Close ends them and waits. What a request does is the
// Handler's business, given by the daemon. It imports cli and the
// module's public packages.
package control
