package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/meshview"
)

// skewConn is a net.Conn for a follower that never reads: its writes
// keep to their deadline on a clock that the test moves ahead (skew),
// as if that much time had passed; a deadline counts from the clock as
// it was when set.
type skewConn struct {
	net.Conn // nil: only what the stream uses is implemented

	mu       sync.Mutex
	skew     time.Duration
	deadline time.Time // on the moved clock; zero: none
	out      bytes.Buffer
	wrote    chan struct{} // a signal per Write and SetWriteDeadline
	closed   chan struct{} // closed by SetReadDeadline
	once     sync.Once
}

func newSkewConn() *skewConn {
	return &skewConn{wrote: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (c *skewConn) signal() {
	select {
	case c.wrote <- struct{}{}:
	default:
	}
}

func (c *skewConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	if !c.deadline.IsZero() && time.Now().Add(c.skew).After(c.deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	return c.out.Write(p)
}

func (c *skewConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.signal()
	c.deadline = t.Add(c.skew)
	return nil
}

func (c *skewConn) Read([]byte) (int, error) { <-c.closed; return 0, os.ErrDeadlineExceeded }

func (c *skewConn) SetReadDeadline(time.Time) error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *skewConn) lines() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Count(c.out.String(), "\n")
}

func (c *skewConn) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skew += d
}

// TestFollowSurvivesABurstAfterQuiet: a follower idle for longer than
// the write timeout still gets a burst of dead letters (more than one
// buffer's worth), each within a fresh deadline.
func TestFollowSurvivesABurstAfterQuiet(t *testing.T) {
	d, _ := startTestDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
	conn := newSkewConn()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, stream, err := d.followDeadLetters(ctx, control.Request{Cmd: "deadletters", Follow: true}, conn)
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { defer close(ended); stream() }()
	select { // the stream set its first deadline: it waits for letters now
	case <-conn.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not start")
	}
	conn.advance(2 * meshview.WriteTimeout) // a quiet while
	ghost, _ := actor.NewRef(d.node.ID().String(), "ghost")
	const burst = 100 // some 20 KiB of lines
	for range burst {
		d.node.System().Send(ghost, "x")
	}
	deadline := time.After(10 * time.Second)
	for conn.lines() < burst {
		select {
		case <-ended:
			t.Fatalf("the stream ended after %d of %d letters", conn.lines(), burst)
		case <-conn.wrote:
		case <-deadline:
			t.Fatalf("%d of %d letters written", conn.lines(), burst)
		}
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with its context")
	}
	if n := conn.lines(); n != burst {
		t.Fatalf("%d lines, want %d", n, burst)
	}
}

// TestDeadLettersAnswerIsBounded: however long the texts other peers
// put in the records kept, an answer carries the latest that fit and
// says how many older ones it left out.
func TestDeadLettersAnswerIsBounded(t *testing.T) {
	big := control.DeadLetter{To: "p/" + strings.Repeat("n", 255), Type: strings.Repeat("<", 160), Reason: strings.Repeat("<", 160)}
	es := make([]control.DeadLetter, 100)
	for i := range es {
		es[i] = big
		es[i].Seq = uint64(i + 1)
	}
	one, _ := json.Marshal(big)
	budget := 10*(len(one)+1) + len(one)/2
	got, omitted := fitDeadLetters(es, budget)
	if len(got) != 10 || omitted != 90 || got[0].Seq != 91 || got[9].Seq != 100 {
		t.Fatalf("%d kept (from %d), %d omitted; want the latest 10 and 90", len(got), got[0].Seq, omitted)
	}
	if got, omitted := fitDeadLetters(es[:3], budget); len(got) != 3 || omitted != 0 {
		t.Fatalf("what fits: %d kept, %d omitted", len(got), omitted)
	}
}
