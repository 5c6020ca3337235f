// Package chat is the LAN chat's terminal UI (RunTUI): scrollback,
// member list and input line around the chat core, which reaches it only
// as lines read and written. The UI owns its model; the chat core (the
// actors, rooms, history and nick book) still lives in the main package,
// and is to move here next.
//
// It imports cli and the module's public packages.
package chat
