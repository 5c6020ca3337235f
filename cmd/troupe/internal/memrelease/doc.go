// Package memrelease gives the daemon's freed heap back to the system
// when the process has gone quiet.
//
// Go returns freed heap only after a collection, and a collection comes
// when the heap has grown by GOGC percent since the last one (or every
// 2 minutes). A daemon that held hundreds of MiB for other peers (their
// unfinished frames, queued replies, monitors) and then let go of them
// allocates little afterwards, so the garbage and its RSS stay for up
// to two minutes. Rule (pure) decides from runtime/metrics samples when
// to collect and return the free heap (debug.FreeOSMemory): the process
// allocated little since the last sample and keeps Threshold bytes more
// than its idle heap (the least kept after a release), with a gap
// between releases that grows while releases give back little. Start samples and applies it;
// it owns one goroutine. Off says when the process's GOGC or GOMEMLIMIT
// leaves memory to the runtime.
//
// It imports only the standard library.
package memrelease
