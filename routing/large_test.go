package routing

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// TestFragmentsReassembled: fragments on a raw stream, with a small
// message between them, reach the actor as one message after the small one.
func TestFragmentsReassembled(t *testing.T) {
	h, _, sys := testRouter(t, 0)
	got := spawnSink(t, sys)
	big := strings.Repeat("troupe ", 30000) // 210,000 bytes
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := reg.Encode(big)
	if err != nil {
		t.Fatal(err)
	}
	rf := newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "string", Total: uint64(len(body)), Data: body[:100000]})
	rf.send(codec.KindUser, "string", "small")
	rf.fragment(fragmentBody{Data: body[100000:]})
	for _, want := range []string{"small", big} {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("got %.40q (%d bytes), want %.40q (%d bytes)", m, len(m.(string)), want, len(want))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for a message of %d bytes", len(want))
		}
	}
}

// TestBadFragmentsResetTheStream: every fragment sequence that does not add
// up resets the stream and is counted; the node keeps serving.
func TestBadFragmentsResetTheStream(t *testing.T) {
	h, r, _ := testRouter(t, 256<<10)
	data := bytes.Repeat([]byte{0x41}, 1000)
	for name, frames := range map[string][]fragmentBody{
		"continuation first":   {{Data: data}},
		"longer than any max":  {{Type: "bytes", Total: codec.MaxFrameLimit + 1, Data: data}},
		"no type":              {{Total: 2000, Data: data}},
		"more than announced":  {{Type: "bytes", Total: 1500, Data: data}, {Data: data}},
		"new before last done": {{Type: "bytes", Total: 1500, Data: data}, {Type: "bytes", Total: 1500, Data: data}},
		"empty first":          {{Type: "bytes", Total: 1500}},
		"empty continuation":   {{Type: "bytes", Total: 1500, Data: data}, {}},
		"reply flag only":      {{Type: "bytes", Total: 1500, Data: data}, {Reply: true, Data: data[:500]}},
	} {
		before := r.Stats().StreamsReset
		rf := newRawFrames(t, h)
		for _, f := range frames {
			rf.fragment(f)
		}
		if !rf.reset() {
			t.Fatalf("%s: stream not reset", name)
		}
		if after := r.Stats().StreamsReset; after != before+1 {
			t.Fatalf("%s: %d streams reset, want %d", name, after, before+1)
		}
	}
}

// TestOverTheMaxFrameRefusedOneByOne: messages over the receiver's maximum
// frame from a sender whose maximum is larger, whole or in fragments, are
// refused one by one (dead letters here, counted); the messages around
// them arrive and the stream goes on.
func TestOverTheMaxFrameRefusedOneByOne(t *testing.T) {
	h, r, sys := testRouter(t, 2048)
	got := spawnSink(t, sys)
	rf := newRawFrames(t, h)
	rf.send(codec.KindUser, "string", "before")
	rf.send(codec.KindUser, "string", strings.Repeat("x", 10000)) // one frame
	_, body, err := rf.reg.Encode(bytes.Repeat([]byte{1}, 150000))
	if err != nil {
		t.Fatal(err)
	}
	rf.fragment(fragmentBody{Type: "bytes", Total: uint64(len(body)), Data: body[:fragmentData]})
	rf.send(codec.KindUser, "string", "between")
	for off := fragmentData; off < len(body); off += fragmentData {
		rf.fragment(fragmentBody{Data: body[off:min(off+fragmentData, len(body))]})
	}
	rf.send(codec.KindUser, "string", "after")
	// A signal over the maximum (a Down with a long reason) goes through:
	// a frame of minReadFrame bounds it. Nobody monitors here: it is
	// handed on and ignored.
	rf.send(codec.KindSystem, typeDown, downBody{ID: 9, Reason: reasonBody{Code: codeOther, Text: strings.Repeat("r", 5000)}})
	rf.send(codec.KindUser, "string", "last")
	for _, want := range []string{"before", "between", "after", "last"} {
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("got %.40q, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timed out waiting for %q", want)
		}
	}
	// Stats count what was handed on just after it was: the stream's end,
	// which its reader answers once it counted all, makes them final.
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.closed() {
		t.Fatal("the reader did not end the stream")
	}
	if st := r.Stats(); st.TooLargeIn != 2 || st.Received != 5 || st.StreamsReset != 0 || st.DecodeErrors != 0 || sys.DeadLetters() != 2 {
		t.Fatalf("stats %+v, %d dead letters; want 2 refused, 5 handed on, 2 dead letters, nothing reset", st, sys.DeadLetters())
	}
}

// TestStreamEndingInsideAMessage: a stream that ends (is closed, not
// reset) between the fragments of a message is reset and counted, like a
// truncated frame; one that ends between messages is closed.
func TestStreamEndingInsideAMessage(t *testing.T) {
	h, r, _ := testRouter(t, 0)
	before := r.Stats().StreamsReset
	rf := newRawFrames(t, h)
	rf.send(codec.KindUser, "string", "small")
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.closed() {
		t.Fatal("a stream that ended between messages was not closed")
	}
	rf = newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: 1500, Data: make([]byte, 1000)})
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.reset() {
		t.Fatal("a stream that ended inside a message was not reset")
	}
	if after := r.Stats().StreamsReset; after != before+1 {
		t.Fatalf("%d streams reset, want %d", after-before, 1)
	}
}

// TestNewStreamStartsClean: the half-built message of a stream that broke
// is gone on the next stream: a continuation there is refused, and a whole
// message goes through.
func TestNewStreamStartsClean(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	got := make(chan any, 1)
	if _, err := sys.Spawn("sink", func(c *actor.Context) {
		c.Receive(actor.Any(func(m any) { got <- m }))
	}); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{0x41}, 1000)
	rf := newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: 2000, Data: data})
	_ = rf.s.Reset()
	before := r.Stats().StreamsReset
	rf = newRawFrames(t, h)
	rf.fragment(fragmentBody{Data: data})
	if !rf.reset() || r.Stats().StreamsReset != before+1 {
		t.Fatal("a continuation of another stream's message was taken")
	}
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	_, body, err := reg.Encode(bytes.Repeat([]byte{0x42}, 1500))
	if err != nil {
		t.Fatal(err)
	}
	rf = newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: uint64(len(body)), Data: body[:1000]})
	rf.fragment(fragmentBody{Data: body[1000:]})
	select {
	case m := <-got:
		if b, ok := m.([]byte); !ok || !bytes.Equal(b, bytes.Repeat([]byte{0x42}, 1500)) {
			t.Fatalf("got %T of %v", m, m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message did not arrive")
	}
}

// TestCloseDuringLargeMessage: a router closing while its writer is in the
// middle of large messages to a peer that does not read gives up when the
// Close context ends, and reports the messages dropped.
func TestCloseDuringLargeMessage(t *testing.T) {
	h, r, sys := testRouter(t, 0)
	other := testhost.NewHost(t)
	opened, release := make(chan struct{}, 1), make(chan struct{})
	other.SetStreamHandler(ProtoMsg, func(s network.Stream) {
		select { // never read
		case opened <- struct{}{}:
		default:
		}
		<-release
		_ = s.Reset()
	})
	t.Cleanup(func() { close(release) }) // before NewHost's cleanup closes other
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Connect(ctx, libp2ppeer.AddrInfo{ID: other.ID(), Addrs: other.Addrs()}); err != nil {
		t.Fatal(err)
	}
	to, err := actor.NewRef(other.ID().String(), "sink")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0x43}, 1000<<10)
	for range 40 { // more than yamux and TCP buffer
		sys.Send(to, big)
	}
	select {
	case <-opened:
	case <-ctx.Done():
		t.Fatal("no stream opened")
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer closeCancel()
	closed := make(chan error, 1)
	go func() { closed <- r.Close(closeCtx) }()
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close: %v, want the context's deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
}

// TestOverTheMaxFrameInOneFragment: a message over the receiver's
// maximum frame whose first fragment carries all of it (no writer of
// ours sends one, a peer may) is refused like any other: counted, and
// bounced to its target's dead letters, not to nobody.
func TestOverTheMaxFrameInOneFragment(t *testing.T) {
	h, r, sys := testRouter(t, 2048)
	spawnSink(t, sys)
	rf := newRawFrames(t, h)
	_, body, err := rf.reg.Encode(bytes.Repeat([]byte{1}, 10000))
	if err != nil {
		t.Fatal(err)
	}
	rf.fragment(fragmentBody{Type: "bytes", Total: uint64(len(body)), Data: body})
	if err := rf.s.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if !rf.closed() {
		t.Fatal("the reader did not end the stream")
	}
	if st := r.Stats(); st.TooLargeIn != 1 || st.StreamsReset != 0 || st.DecodeErrors != 0 || sys.DeadLetters() != 1 {
		t.Fatalf("stats %+v, %d dead letters; want 1 refused, 1 dead letter, no decode error, nothing reset", st, sys.DeadLetters())
	}
}

// TestOverTheMaxFrameRefusedThenFoundBad: a first fragment over the
// receiver's maximum frame whose data does not add up is refused
// (counted) before the stream is reset for it.
func TestOverTheMaxFrameRefusedThenFoundBad(t *testing.T) {
	h, r, sys := testRouter(t, 2048)
	spawnSink(t, sys)
	rf := newRawFrames(t, h)
	rf.fragment(fragmentBody{Type: "bytes", Total: 10000}) // no data
	if !rf.reset() {
		t.Fatal("stream not reset")
	}
	if st := r.Stats(); st.TooLargeIn != 1 || st.StreamsReset != 1 {
		t.Fatalf("stats %+v; want 1 refused, 1 stream reset", st)
	}
}
