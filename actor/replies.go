package actor

import "sync"

// The reply table: where a reply to System.Ask finds the goroutine that
// waits for it. An Ask from plain Go code has no actor behind it, so its
// request's sender names no registered actor; a reply addressed to such a
// name misses the registry, and the table is asked before the reply
// becomes a dead letter (see unregistered). The table is keyed by the
// Ask's correlation ID (random, see newCorr) and sharded by it, so that
// concurrent Asks rarely meet on a lock.

// replyShards is the number of shards of a replyTable: a power of two.
const replyShards = 32

// replyTable holds the waiting System.Asks. Safe for concurrent use.
type replyTable struct {
	shards [replyShards]replyShard
}

// replyShard is one lock's worth of waiters.
type replyShard struct {
	mu sync.Mutex         // guards m; a leaf: nothing is called with it held
	m  map[uint64]*waiter // by correlation ID
	_  [64 - 16]byte      // one cache line a shard: neighbours' locks apart
}

// waiter is a System.Ask waiting for its reply. Whoever removes it from
// the table owns its outcome: the reply (complete), Shutdown (failAll), or
// Ask itself when it gives up.
type waiter struct {
	corr uint64
	from string     // the request's sender, "<peer>/<generated name>"
	ch   chan *node // capacity 1: the reply, or Shutdown's exit signal
}

func (t *replyTable) shard(corr uint64) *replyShard {
	return &t.shards[corr&(replyShards-1)]
}

// add records w, and reports false when its correlation ID is taken (the
// caller draws another).
func (t *replyTable) add(w *waiter) bool {
	sh := t.shard(w.corr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, taken := sh.m[w.corr]; taken {
		return false
	}
	if sh.m == nil {
		sh.m = make(map[uint64]*waiter)
	}
	sh.m[w.corr] = w
	return true
}

// remove takes w out of the table and reports whether it was still there
// (false: a reply or Shutdown took it, and its ch has the outcome or soon
// will).
func (t *replyTable) remove(w *waiter) bool {
	sh := t.shard(w.corr)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[w.corr] != w {
		return false
	}
	delete(sh.m, w.corr)
	return true
}

// complete hands n, a reply addressed to `to`, to the Ask waiting for it,
// and reports false when none waits (the Ask gave up, or was answered
// already, or n is not for it: the sender's name must match too).
func (t *replyTable) complete(to Ref, n *node) bool {
	sh := t.shard(n.corr)
	sh.mu.Lock()
	w := sh.m[n.corr]
	if w == nil || w.from != to.s {
		sh.mu.Unlock()
		return false
	}
	delete(sh.m, n.corr)
	sh.mu.Unlock()
	w.ch <- n // never blocks: the one send on ch
	return true
}

// failAll takes every waiter out of the table and hands each the node
// that newNode returns.
func (t *replyTable) failAll(newNode func() *node) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		m := sh.m
		sh.m = nil
		sh.mu.Unlock()
		for _, w := range m {
			w.ch <- newNode()
		}
	}
}

// unregistered disposes of n, which no registered actor named `to` took:
// a reply goes to the System.Ask waiting for it, anything else (and a
// reply nobody waits for any more) is undeliverable.
func (s *System) unregistered(to Ref, n *node) {
	if n.kind == kindReply && s.replies.complete(to, n) {
		return
	}
	s.undeliverable(to, n, ErrNoSuchActor)
}
