// Package latency keeps the round trips to a node's connected peers known
// and, with a liveness timeout, tells the node of the peers it waits on
// that went silent.
//
// It owns the probe state of every connected peer (when it is due, its
// failed pings, its last sign of life) and the ping streams kept open
// between pings. It knows nothing of the node: Start takes the libp2p
// host, the liveness timeout, a Life func that says whether the timeout
// applies to a peer and how many messages came from it, and a gone func
// called for each peer found silent (the node closes its connections).
//
// # Goroutines
//
// One prober goroutine, from Start to Close, owns the probe state; each
// ping runs on a goroutine of its own (at most 8 at once), which the
// prober waits for when it stops. Life and gone are called on the
// prober's goroutine.
//
// # Locks
//
// pingStreams.mu guards the idle ping streams: a leaf lock, held for no
// call out. The probe state has no lock (one goroutine owns it).
//
// # Files
//
//	prober.go     the prober's loop: which peers are due, a ping's result
//	liveness.go   the liveness timeout: its times, signs of life, silent peers
//	pingstream.go ping streams kept open per peer
package latency
