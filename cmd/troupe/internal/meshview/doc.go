// Package meshview is the daemon's live mesh view: what the web page
// (-ui), 'troupe top' and the HTTP API show.
//
// A Hub samples the node once per Every through the function the daemon
// gives it and hands the latest sample (a View: the node, its peers,
// counters and their rates, WithRates) to whoever waits (Hub.Next).
// NewHandler serves the page (ui/, embedded), GET /api/mesh, GET
// /api/events (server-sent events, one per sample) and GET
// /api/deadletters, to localhost only; Serve listens for it on a loopback
// address. Fetch asks a daemon for a sample over its control socket,
// Render prints one as text and RunTop is 'troupe top's full-screen
// view. It is read-only: nothing here sends a message or changes the
// node.
//
// # Files
//
//   - view.go: View, Peer, WithRates, CapNames and the Hub.
//   - http.go: the HTTP handler, the event stream and Serve.
//   - top.go: the terminal view (Fetch, Render, RunTop).
//   - ui/: the page.
//
// # State
//
// A Hub's latest sample is written by its one goroutine (Start) under
// its mutex; a sample's JSON is encoded once, on first request. The
// terminal view's model is owned by its bubbletea program. It
// imports cli, config, control and the module's public packages.
package meshview
