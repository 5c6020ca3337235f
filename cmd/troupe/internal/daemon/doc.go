// Package daemon is the running 'troupe daemon': its node, the built-in
// actors (echo, info, watcher), the answers to the control socket's
// requests, the mesh view's samples, the metrics and memory release. The
// commands in package main talk to it over the control socket; main
// starts it (Start) for 'troupe daemon' and for a chat with no daemon of
// its own (Options.EmbeddedChat), and Close stops it.
//
// A Daemon owns its node, control server, HTTP servers, mesh view hub and
// the goroutines that print peers joining and leaving; Close ends them
// and waits. Its fields are set by Start and then only read,
// but for the log level (a slog.LevelVar) and the stop signal (closed
// once). It imports the module's public packages and its siblings cli,
// config, control, chat, meshview and memrelease.
//
// # Files
//
//   - daemon.go: Daemon, Options, Start, Close, the accessors, and the
//     joined/left lines.
//   - builtins.go: the codec registry and the built-in actors.
//   - handlers.go: the requests' dispatch and the answers to id, peers,
//     actors, ask, ping and connect.
//   - send.go: send (with the wait for a bounce), ParseTarget.
//   - jsonmsg.go: messages given as JSON, to CBOR and back.
//   - deadletters.go: the dead letters kept, and --follow's stream.
//   - lifecycle.go: stop, the log level, doctor's answer.
//   - chat.go: the daemon side of 'troupe chat'.
//   - meshview.go: the mesh view's sample of the node.
//   - memory.go: memrelease's sampler and its metrics.
package daemon
