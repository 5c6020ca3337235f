package routing

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/troupe-mesh/troupe/actor/transport"
)

// The rooms of a link queue (rooms.go), as data: what each kind may fill
// of a queue, however the others fill it; and the queue that keeps them,
// one FIFO whose counts come back to zero.

// A message of each kind, as the envelope's fields say it.
type kindOf struct {
	name  string
	corr  uint64
	reply bool
}

var (
	oneWay  = kindOf{"one-way", 0, false}
	request = kindOf{"request", 7, false}
	reply   = kindOf{"reply", 7, true}
)

// fill pushes messages of kind k into q until it refuses one, and
// returns how many it took.
func fill(q *outQueue, k kindOf) int {
	n := 0
	for q.pushBelow("sink", "source", n, k.corr, k.reply, q.max) {
		n++
	}
	return n
}

// TestRoomsAdmit: the rooms as a table of queue states. Replies may fill
// the queue; requests all but an eighth; one-way messages all but a
// quarter, and none past what requests leave of the seven eighths.
func TestRoomsAdmit(t *testing.T) {
	const max = 64 // rooms of 8: one-way 48, requests and one-way 56
	for _, c := range []struct {
		n                 int
		oneWay, requests  int
		wantO, wantQ, wan bool
	}{
		{0, 0, 0, true, true, true},
		{47, 47, 0, true, true, true},
		{48, 48, 0, false, true, true},  // one-way at its room
		{55, 48, 7, false, true, true},  // requests in their eighth
		{56, 48, 8, false, false, true}, // the replies' eighth is left
		{63, 48, 8, false, false, true},
		{64, 48, 8, false, false, false}, // full
		{56, 0, 56, false, false, true},  // requests took the seven eighths
		{50, 10, 40, true, true, true},
		{64, 0, 0, false, false, false}, // replies fill the queue
		{40, 0, 0, true, true, true},    // replies do not count against the others' rooms
		{63, 0, 0, true, true, true},
	} {
		k := kinds{oneWay: c.oneWay, requests: c.requests}
		r := roomsOf(max)
		got := [3]bool{r.admits(c.n, k, oneWay.corr, oneWay.reply), r.admits(c.n, k, request.corr, request.reply), r.admits(c.n, k, reply.corr, reply.reply)}
		if want := [3]bool{c.wantO, c.wantQ, c.wan}; got != want {
			t.Errorf("n %d (one-way %d, requests %d): admits one-way, request, reply = %v, want %v", c.n, c.oneWay, c.requests, got, want)
		}
	}
}

// TestRoomsOfSmallQueues: in a real queue of every small bound, what each
// kind still finds after the others flooded it: one-way messages always
// a slot; replies one at least from a bound of 2 (however requests and
// one-way messages fill the rest), requests one at least from 3 that
// one-way messages cannot take; from 8 on, the eighths of roomsOf.
func TestRoomsOfSmallQueues(t *testing.T) {
	for n := 1; n <= 17; n++ {
		q := newOutQueue(n)
		o := fill(q, oneWay)
		rq := fill(q, request)
		rp := fill(q, reply)
		q2 := newOutQueue(n)
		rq2 := fill(q2, request)
		rp2 := fill(q2, reply)
		if o+rq+rp != n || rq2+rp2 != n {
			t.Errorf("n %d: one-way %d, requests %d, replies %d; requests alone %d, replies %d: the queue not filled", n, o, rq, rp, rq2, rp2)
		}
		keptRp, keptRq := min(n-1, 1), min(n-2, 1) // at least
		if n >= 8 {
			keptRp, keptRq = n/8, n/4-n/8
		}
		switch {
		case o < 1:
			t.Errorf("n %d: no slot for one-way messages", n)
		case rp < keptRp || rp2 < keptRp:
			t.Errorf("n %d: %d replies after one-way messages and requests, %d after requests alone, want %d", n, rp, rp2, keptRp)
		case rq < keptRq:
			t.Errorf("n %d: %d requests after one-way messages, want %d", n, rq, keptRq)
		case n >= 8 && (o != n-n/4 || rq2 != n-n/8):
			t.Errorf("n %d: one-way %d, requests alone %d, want %d and %d", n, o, rq2, n-n/4, n-n/8)
		}
	}
}

// TestRoomsHoldWhateverFloods: whichever kind floods a queue first, each
// other kind still finds its room, in a real outQueue; the queue keeps
// one FIFO across kinds; and taking everything brings the counts back
// to zero.
func TestRoomsHoldWhateverFloods(t *testing.T) {
	const max = 1000
	for _, c := range []struct {
		flood         kindOf
		floodN        int
		then          kindOf
		thenN         int
		lastN, lastOf int // the replies that fit after both
	}{
		{oneWay, max - max/4, request, max / 8, max / 8, 0},
		{oneWay, max - max/4, reply, max / 4, 0, 0},
		{request, max - max/8, oneWay, 0, max / 8, 0},
		{request, max - max/8, reply, max / 8, 0, 0},
		{reply, max, oneWay, 0, 0, 0},
	} {
		t.Run(fmt.Sprintf("%s then %s", c.flood.name, c.then.name), func(t *testing.T) {
			q := newOutQueue(max)
			if got := fill(q, c.flood); got != c.floodN {
				t.Fatalf("%d %s messages queued, want %d", got, c.flood.name, c.floodN)
			}
			if got := fill(q, c.then); got != c.thenN {
				t.Fatalf("then %d %s messages, want %d", got, c.then.name, c.thenN)
			}
			if got := fill(q, reply); got != c.lastN {
				t.Fatalf("then %d replies, want %d", got, c.lastN)
			}
			// One FIFO: the flood first, in order, then the rest.
			var got []outMsg
			for b := q.takeBatch(nil); len(b) > 0; b = q.takeBatch(nil) {
				got = append(got, b...)
			}
			if len(got) != c.floodN+c.thenN+c.lastN {
				t.Fatalf("took %d, want %d", len(got), c.floodN+c.thenN+c.lastN)
			}
			for i, m := range got {
				want, seq := c.flood, i
				switch {
				case i >= c.floodN+c.thenN:
					want, seq = reply, i-c.floodN-c.thenN
				case i >= c.floodN:
					want, seq = c.then, i-c.floodN
				}
				if m.corr != want.corr || m.reply != want.reply || m.msg != seq {
					t.Fatalf("message %d: %+v, want %s number %d", i, m, want.name, seq)
				}
			}
			if q.n != 0 || q.kinds != (kinds{}) {
				t.Fatalf("after taking everything: n %d, kinds %+v", q.n, q.kinds)
			}
		})
	}
}

// TestPushRunStopsAtItsRoom: an actor's run of sends is queued while each
// message's room has space and stops at the first refused (none of the
// rest overtakes it), though a reply after it would fit; the counts match
// what was queued. An empty room grows no chunk.
func TestPushRunStopsAtItsRoom(t *testing.T) {
	const max = 64
	q := newOutQueue(max)
	for i := range 46 {
		q.push(&transport.Envelope{Msg: i})
	}
	run := make([]transport.Outbound, 5)
	run[0].Corr, run[0].Reply = 1, true // a reply
	// run[1], run[2]: one-way, the last two of the room (46, 47 → 48)
	// run[3]: one-way, refused; run[4]: a reply, which must not pass it
	run[4].Corr, run[4].Reply = 2, true
	if got := q.pushRun("source", run); got != 3 {
		t.Fatalf("pushRun queued %d, want 3", got)
	}
	if q.n != 49 || q.kinds != (kinds{oneWay: 48}) {
		t.Fatalf("n %d, kinds %+v; want 49, 48 one-way", q.n, q.kinds)
	}
	// A queue whose one-way room ends with a full chunk (1365 − 341 =
	// 1024 = chunkSize): a run refused there grows no empty chunk, which
	// takeBatch would hand the writer as no batch at all.
	q2 := newOutQueue(1365)
	for range chunkSize {
		q2.push(&transport.Envelope{})
	}
	if got := q2.pushRun("source", make([]transport.Outbound, 3)); got != 0 || len(q2.chunks) != 1 {
		t.Fatalf("pushRun at the room: queued %d, %d chunks; want 0, 1", got, len(q2.chunks))
	}
}

// TestCoalescedDeclarationKeepsCounts: a loss declaration that takes a
// newer number in place (pushLost) leaves the counts as they were, and
// taking it brings them back to zero.
func TestCoalescedDeclarationKeepsCounts(t *testing.T) {
	q := newOutQueue(8)
	q.pushLost(lostBody{Session: 3}, 3)
	q.pushLost(lostBody{Session: 5}, 5)
	if q.n != 1 || q.kinds != (kinds{requests: 1}) {
		t.Fatalf("n %d, kinds %+v", q.n, q.kinds)
	}
	q.takeBatch(nil)
	if q.n != 0 || q.kinds != (kinds{}) {
		t.Fatalf("after the batch: n %d, kinds %+v", q.n, q.kinds)
	}
}

// TestKindsTook: a batch taken counts out by kind, whether the queue held
// one kind only (no look at the batch) or several (each one counted).
func TestKindsTook(t *testing.T) {
	o, q, r := outMsg{}, outMsg{corr: 3}, outMsg{corr: 3, reply: true}
	for _, c := range []struct {
		name   string
		before kinds
		n      int
		batch  []outMsg
		want   kinds
	}{
		{"one-way only", kinds{oneWay: 5}, 5, []outMsg{o, o, o}, kinds{oneWay: 2}},
		{"requests only", kinds{requests: 4}, 4, []outMsg{q, q}, kinds{requests: 2}},
		{"replies only", kinds{}, 6, []outMsg{r, r, r}, kinds{}},
		{"mixed", kinds{oneWay: 2, requests: 2}, 6, []outMsg{o, r, q, r}, kinds{oneWay: 1, requests: 1}},
		{"mixed, all taken", kinds{oneWay: 1, requests: 1}, 3, []outMsg{q, o, r}, kinds{}},
	} {
		k := c.before
		k.took(c.batch, c.n)
		if k != c.want {
			t.Errorf("%s: %+v after the batch, want %+v", c.name, k, c.want)
		}
	}
}

// TestRoomsModel: random pushes of every kind (one by one, in runs, loss
// declarations) and batches taken, in queues of small and large bounds,
// against a model, a FIFO of what was queued: each push is taken exactly
// when the model says its kind has room (refused early, a kind starves;
// taken late, a room overflows), a run stops at its first refusal, a loss
// declaration is always taken (in place of one queued last), a batch is
// the model's oldest messages in order, and the queue's counts by kind
// always match the model's. The rooms' figures themselves are
// TestRoomsAdmit's and TestRoomsOfSmallQueues'.
func TestRoomsModel(t *testing.T) {
	for _, max := range []int{1, 2, 3, 5, 8, 9, 100, 2*chunkSize + 7} {
		t.Run(fmt.Sprint(max), func(t *testing.T) { roomsModel(t, max, 20000) })
	}
}

// modelMsg is a message of the model of TestRoomsModel.
type modelMsg struct {
	msg   any
	corr  uint64
	reply bool
}

func roomsModel(t *testing.T, max, ops int) {
	rng := rand.New(rand.NewPCG(uint64(max), 2))
	q := newOutQueue(max)
	r := roomsOf(max)
	kindsOf := []kindOf{oneWay, request, reply}
	var (
		model  []modelMsg
		n      int   // len(model)
		k      kinds // of model, by kind
		losses int   // loss declarations in model
		next   int   // the next message's number
		batch  []outMsg
	)
	room := func(n int, k kinds, m kindOf) bool { // the rooms, as the docs state them
		switch {
		case n >= max:
			return false
		case m.reply:
			return true
		case k.oneWay+k.requests >= r.nonReply:
			return false
		}
		return m.corr != 0 || k.oneWay < r.oneWay
	}
	for op := range ops {
		// Each stretch of ops floods with one kind mostly, so that every
		// room is met.
		flood := kindsOf[op/500%3]
		pick := func() kindOf {
			if rng.IntN(5) == 0 {
				return kindsOf[rng.IntN(3)]
			}
			return flood
		}
		switch x := rng.IntN(10); {
		case x < 5:
			m := pick()
			want := room(n, k, m)
			if got := q.push(&transport.Envelope{Msg: next, Corr: m.corr, Reply: m.reply}); got != want {
				t.Fatalf("op %d: push of a %s with %d queued (%+v): %v, want %v", op, m.name, n, k, got, want)
			}
			if want {
				model = append(model, modelMsg{next, m.corr, m.reply})
				n++
				k.add(m.corr, m.reply, 1)
			}
			next++
		case x < 7:
			run := make([]transport.Outbound, rng.IntN(min(2*chunkSize, 3*max)+1))
			want, wn, wk := 0, n, k
			for i := range run {
				m := pick()
				run[i].Msg, run[i].Corr, run[i].Reply = next+i, m.corr, m.reply
				if want == i && room(wn, wk, m) {
					want++
					wn++
					wk.add(m.corr, m.reply, 1)
				}
			}
			if got := q.pushRun("source", run); got != want {
				t.Fatalf("op %d: pushRun of %d with %d queued (%+v) took %d, want %d", op, len(run), n, k, got, want)
			}
			for _, o := range run[:want] {
				model = append(model, modelMsg{o.Msg, o.Corr, o.Reply})
			}
			n, k = wn, wk
			next += len(run)
		case x < 8 && losses < 3:
			s := uint64(op + 1)
			if !q.pushLost(lostBody{Session: s}, s) {
				t.Fatalf("op %d: a loss declaration refused with %d queued (%+v)", op, n, k)
			}
			if last := len(model) - 1; last >= 0 && isLoss(model[last].msg) {
				model[last] = modelMsg{lostBody{Session: s}, s, false} // renumbered in place
			} else {
				model = append(model, modelMsg{lostBody{Session: s}, s, false})
				n++
				k.add(s, false, 1)
				losses++
			}
		default:
			batch = q.takeBatch(batch[:0])
			if len(batch) == 0 && n > 0 || len(batch) > n {
				t.Fatalf("op %d: a batch of %d with %d queued", op, len(batch), n)
			}
			for i, m := range batch {
				if w := model[i]; m.msg != w.msg || m.corr != w.corr || m.reply != w.reply {
					t.Fatalf("op %d: message %d of the batch is %+v, want %+v: not the queue's order", op, i, m, w)
				}
				k.add(m.corr, m.reply, -1)
				if isLoss(m.msg) {
					losses--
				}
			}
			model = model[len(batch):]
			n -= len(batch)
			clear(batch)
		}
		if q.kinds != k || q.n != n {
			t.Fatalf("op %d: n %d, kinds %+v; the model holds %d, %+v", op, q.n, q.kinds, n, k)
		}
		if n > max+losses || k.oneWay > r.oneWay || k.oneWay+k.requests > r.nonReply+losses {
			t.Fatalf("op %d: %d queued (%+v, %d loss declarations): past a room %+v", op, n, k, losses, r)
		}
	}
}
