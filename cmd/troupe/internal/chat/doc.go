// Package chat is the LAN chat of the troupe binary: the chat core and its
// terminal UI.
//
// Each user is an actor "chat-<nick>" on its peer; a room is the group
// "chat-<room>"; a line said in a room is broadcast to the group, and /msg
// sends a Direct to the other user's actor. Run runs one user's session
// on a node, reading typed lines and writing one line per event; the
// daemon runs it for a control connection, and ThroughDaemon is the
// client's side of that connection. RunTUI is the full-screen UI around a
// session, which reaches it only as lines read and written.
//
// # Files
//
//   - core.go: the wire types, Register, CheckName, the session and Run.
//   - state.go: the user's actor: its state, input commands, renames.
//   - trust.go: what is shown of other peers' users (the nick book,
//     resolveNick) and the line rate per peer.
//   - history.go: a late joiner's history window.
//   - input.go: the user's input, a thread-style actor (SpawnThread)
//     that reads typed lines with a blocking read and ends with the
//     session.
//   - client.go: ThroughDaemon, the chat through a daemon's socket.
//   - tui.go: the terminal UI.
//
// # State
//
// The user's actor owns its chatState (room, members, history window);
// the session's nick book and line limiter are shared by a user's old and
// new actor during a rename and each has its own mutex; the UI owns its
// model. It imports cli, control and the module's public packages.
package chat
