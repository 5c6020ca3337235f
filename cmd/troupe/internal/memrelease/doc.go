// Package memrelease gives the daemon's freed heap back to the system
// when the process has gone quiet.
//
// Go returns freed heap only after a collection, and a collection comes
// when the heap has grown by GOGC percent since the last one (or every
// 2 minutes). A daemon that held hundreds of MiB for other peers (their
// unfinished frames, queued replies, monitors) and then let go of them
// allocates little afterwards, so the garbage and its RSS stay for up
// to two minutes. Rule (pure) decides from samples of runtime/metrics
// when to collect and call debug.FreeOSMemory: the process allocated little since
// the last sample, and the heap holds at least Threshold bytes that a
// collection would free or has freed but not returned; at most once per
// MinGap. Start samples and applies it; it owns one goroutine.
//
// It imports only the standard library.
package memrelease
