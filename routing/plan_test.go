package routing

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// The batch planner alone, into a bytes.Buffer: no router, no hosts. The
// model tests of large messages (large_model_test.go) drive it too.

func testPlanner(t *testing.T, maxFrame int) (planner, *Router) {
	t.Helper()
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	if err := registerWire(reg); err != nil {
		t.Fatal(err)
	}
	cfg := config{Registry: reg, MaxFrame: maxFrame, LinkQueue: 64 << 10}
	return newPlanner(cfg), &Router{cfg: cfg} // the Router only to decode (wantMessages)
}

// Messages the planner refuses are reported with their reasons, in
// order, each once, and cost the others nothing; stale loss messages are
// dropped silently and counted as neither sent nor failed.
func TestPlannerReportsWhatFailed(t *testing.T) {
	p, r := testPlanner(t, 1024)
	type unregistered struct{}
	var wire bytes.Buffer
	fw := codec.NewFrameWriter(&wire, 1024)
	p.floor = 4
	ctl := []outMsg{
		{to: "sink", from: "source", msg: transport.MonitorSignal{ID: 1}},
		{to: lossTo, msg: lostBody{Session: 4}, corr: 4}, // stale
		{to: lossTo, msg: lostBody{Session: 5}, corr: 5},
	}
	if err := p.putBatch(fw, ctl, false, nil); err != nil {
		t.Fatal(err)
	}
	user := []outMsg{
		{to: "sink", from: "source", msg: "small"},
		{to: "sink", from: "source", msg: strings.Repeat("x", 2000)}, // over the frame
		{to: "sink", from: "source", msg: unregistered{}},
		{to: "sink", from: "source", msg: "smaller"},
	}
	if err := p.putBatch(fw, user, true, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.putBatch(fw, user, true, nil); err != nil { // once refused, skipped
		t.Fatal(err)
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	d := p.done
	if d.sent != 5 || d.tooLarge != 1 || d.encodeErrors != 1 || len(d.failed) != 2 {
		t.Fatalf("planned %+v; want 5 sent (a loss message is not counted), 1 too large, 1 unencodable", d)
	}
	if f := d.failed[0]; !errors.Is(f.reason, ErrTooLarge) || len(f.m.msg.(string)) != 2000 {
		t.Fatalf("first failure %+v, want the large blob, too large", f)
	}
	if f := d.failed[1]; !errors.Is(f.reason, codec.ErrUnregistered) {
		t.Fatalf("second failure %+v, want the unregistered type", f)
	}
	wantMessages(t, r, &wire, transport.MonitorSignal{ID: 1}, lostBody{Session: 5},
		"small", "smaller", "small", "smaller")
}

// Which batches are traffic (a request to declare a loss must follow
// some, see Router.asked), and which hold a request still to send.
func TestPlannerBatchKinds(t *testing.T) {
	lost := outMsg{to: lossTo, msg: lostBody{Session: 1}, corr: 1}
	reset := outMsg{to: lossTo, msg: resetBody{}, corr: 2}
	down := outMsg{to: "a", msg: transport.DownSignal{ID: 1}}
	for _, c := range []struct {
		batch          []outMsg
		user           bool
		traffic, reset bool
	}{
		{nil, true, false, false},
		{[]outMsg{{to: "a", msg: "x"}}, true, true, false},
		{[]outMsg{lost}, false, false, false},
		{[]outMsg{lost, reset}, false, false, true},
		{[]outMsg{reset, down}, false, true, true},
		{[]outMsg{{msg: resetBody{}}}, false, false, false}, // handed back already
	} {
		if got := hasTraffic(c.batch, c.user); got != c.traffic {
			t.Errorf("%+v: traffic %v, want %v", c.batch, got, c.traffic)
		}
		if got := hasReset(c.batch); got != c.reset {
			t.Errorf("%+v: a request %v, want %v", c.batch, got, c.reset)
		}
	}
}
