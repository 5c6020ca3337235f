package routing

import "time"

// Moving a link off a relay (docs/nat.md). A stream over a relayed
// connection lives within the relay's limits (libp2p's defaults: 2
// minutes and 128 KiB each way per circuit) and would break at them,
// declaring a loss. Once a direct connection to the peer exists (hole
// punching made one, say), the writer ends its relayed stream cleanly:
// it closes it for writing and waits until the peer's reader handed every
// message on and closed its side (finish). The next batch opens a new
// stream, which libp2p puts on the direct connection. Nothing is lost and
// order holds: the new stream starts after the old one was read to its
// end.

// directEvery is how often a writer on a relayed stream looks for a
// direct connection to its peer.
const directEvery = time.Second

// moveOffRelay ends w's stream when it runs over a relayed connection
// and a direct one to the peer exists, between batches; the next batch
// then opens a new stream. A peer that does not confirm it read the old
// stream to its end (a reset, or nothing within writeTimeout) may have
// lost some of it: the loss is declared, as for a broken stream. The
// writer calls it holding its writing right, which it keeps while the
// peer reads the stream to its end: no write-through writes on it.
func (w *writer) moveOffRelay() {
	if !w.onRelay() || w.buffered() || w.lg != nil && (w.lg.active || len(w.lg.held) > 0) {
		return
	}
	now := time.Now()
	if now.Before(w.directAt) {
		return
	}
	w.directAt = now.Add(directEvery)
	if !w.l.hasDirect() {
		return
	}
	err := finish(w.s) // up to writeTimeout: no one else waits for it
	if err != nil {
		w.l.r.log.Debug("routing: leaving a relayed stream: the peer did not read it to its end", "peer", w.l.peer, "err", err)
		w.dropDeclaring(err)
		return
	}
	w.l.r.movedOffRelay.Add(1)
	_ = w.s.Close()
	w.l.track(w.s, false)
	w.s, w.pw, w.fw = nil, nil, nil
}

// onRelay reports whether w's stream runs over a connection a relay
// limits. Whether a connection is limited never changes, and reading it
// takes the connection's lock (which NewStream shares), so it is read
// once per stream.
func (w *writer) onRelay() bool {
	if w.s == nil {
		return false
	}
	if w.limitedOf != w.s {
		w.limitedOf, w.limited = w.s, w.s.Conn().Stat().Limited
	}
	return w.limited
}

// hasDirect reports whether a connection to the link's peer that no
// relay limits is open.
func (l *link) hasDirect() bool {
	for _, c := range l.r.h.Network().ConnsToPeer(l.peer) {
		if !c.Stat().Limited && !c.IsClosed() {
			return true
		}
	}
	return false
}
