// Package redial redials the peers a node depends on when they
// disconnect: the ones the application connected to, the bootstrap
// peers, and the ones the liveness prober declared gone, with backoff
// (redial.go says when and how often).
//
// It owns the set of peers being redialed and of peers declared gone
// and not yet redialed. It gets what it needs of the node at Start
// (Config: the host, the bootstrap peers, and funcs for whether a peer
// is pinned, whether the dial budget is full, how to connect, and
// whether the node is closing).
//
// # Goroutines
//
// One watches the host's connectedness events from Start to Close; one
// per peer being redialed; one per GoClose. Close stops and waits for
// them all.
//
// # Locks
//
// Redialer.mu guards the peers being redialed and those declared gone.
// It is held over Config's Pinned (the connection manager's IsProtected,
// which takes that manager's lock) and Closing, both quick and
// non-blocking; never over a dial, BudgetFull or a close.
package redial
