package routing

// The rooms of a link queue (issue 34): what share of a queue's bound
// each kind of message may fill, so that a flood of one-way sends cannot
// refuse the asks and replies between two peers. The queue stays one
// FIFO (nothing overtakes what was queued before it); the rooms decide
// only what it refuses. Pure: the queue keeps the counts under its lock.

// kinds counts the envelopes waiting in a queue by kind: one-way
// messages (no correlation ID) and requests (an Ask's: a correlation ID,
// not a reply). Replies are the rest of the queue's count. The router's
// loss messages count by the same fields (a lostBody's number is a
// correlation ID here), so the counts add and take back alike.
type kinds struct {
	oneWay, requests int
}

// add counts one more envelope (d = 1) or one less (d = -1) of the kind
// corr and reply say.
func (k *kinds) add(corr uint64, reply bool, d int) {
	switch {
	case reply:
	case corr == 0:
		k.oneWay += d
	default:
		k.requests += d
	}
}

// took counts out the envelopes of a batch taken from a queue in which
// n envelopes waited. When they were all of one kind (a flood's usual
// case) it needs no look at them.
func (k *kinds) took(batch []outMsg, n int) {
	switch {
	case k.oneWay == n:
		k.oneWay -= len(batch)
		return
	case k.requests == n:
		k.requests -= len(batch)
		return
	case k.oneWay == 0 && k.requests == 0: // replies
		return
	}
	for i := range batch {
		if m := &batch[i]; !m.reply {
			if m.corr == 0 {
				k.oneWay--
			} else {
				k.requests--
			}
		}
	}
}

// rooms are the bounds of a queue by kind, computed once (roomsOf).
type rooms struct {
	all      int // the queue's bound
	nonReply int // one-way messages and requests together
	oneWay   int // one-way messages alone
}

// roomsOf returns the rooms of a queue of bound n: an eighth of it is
// kept for replies, another eighth for requests (see admits), and at
// least one slot each in a small queue: one of 3 to 7 keeps one for
// replies and one for requests, one of 2 one for replies (one-way
// messages and requests share the other), one of 1 none. (Rounded down
// alone, a queue of fewer than 8 would keep nothing for replies, and
// asks flooding it would refuse every reply.) One-way messages always
// have a slot.
func roomsOf(n int) rooms {
	return rooms{all: n, nonReply: max(n-max(n/8, 1), 1), oneWay: max(n-max(n/4, 2), 1)}
}

// admits reports whether a queue with rooms r, in which n envelopes wait
// (k of them counted by kind), takes one more of the kind corr and reply
// say. A reply may fill the queue. A request may not when one-way
// messages and requests together fill all but an eighth of it: that
// eighth is kept for replies. A one-way message may not either, nor when
// one-way messages alone fill all but a quarter: another eighth is kept
// for requests (which replies may take too). So however one kind floods
// the queue, replies have an eighth of it at least, and requests an
// eighth that one-way messages cannot take; a queue of fewer than 8
// keeps a slot for each (see roomsOf).
func (r rooms) admits(n int, k kinds, corr uint64, reply bool) bool {
	switch {
	case n >= r.all:
		return false
	case reply:
		return true
	case k.oneWay+k.requests >= r.nonReply:
		return false
	}
	return corr != 0 || k.oneWay < r.oneWay
}
