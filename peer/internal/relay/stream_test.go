package relay

import (
	"bytes"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"google.golang.org/protobuf/proto"
)

// writeStream is a network.Stream that records what is written and the
// deadlines set; nothing else of it is used.
type writeStream struct {
	network.Stream
	out    bytes.Buffer
	rd, wd time.Time
}

func (w *writeStream) Write(p []byte) (int, error)        { return w.out.Write(p) }
func (w *writeStream) SetReadDeadline(t time.Time) error  { w.rd = t; return nil }
func (w *writeStream) SetWriteDeadline(t time.Time) error { w.wd = t; return nil }

// TestRelayStreamUndecidedIsAStranger: a hop stream whose first message
// this end did not read (so no limit was decided) and that the relay
// answers OK gets the stranger limit, told and enforced, never none: the
// wrapper fails closed. The relay's answer arrives in two writes (its
// length, then the message), as libp2p's writer sends it.
func TestRelayStreamUndecidedIsAStranger(t *testing.T) {
	const dur, data = 3 * time.Second, 4096
	h := &relayHost{pol: relayPolicy{all: true, stranger: relayv2.RelayLimit{Duration: dur, Data: data}}, metrics: new(relayMetrics)}
	ws := new(writeStream)
	s := newRelayStream(ws, h, true)
	ok := &pbv2.HopMessage{Type: pbv2.HopMessage_STATUS.Enum(), Status: pbv2.Status_OK.Enum()}
	b, err := proto.Marshal(ok)
	if err != nil {
		t.Fatal(err)
	}
	framed := delimit(b)
	k := len(framed) - len(b)
	for _, part := range [][]byte{framed[:k], framed[k:]} {
		if n, err := s.Write(part); n != len(part) || err != nil {
			t.Fatalf("write %d bytes: %d, %v", len(part), n, err)
		}
	}
	msg, whole, bad := frame(ws.out.Bytes())
	if !whole || bad {
		t.Fatalf("written %q: not one message", ws.out.Bytes())
	}
	var got pbv2.HopMessage
	if err := proto.Unmarshal(msg, &got); err != nil {
		t.Fatal(err)
	}
	if l := got.GetLimit(); l == nil || l.GetDuration() != uint32(dur/time.Second) || l.GetData() != data {
		t.Fatalf("told limit %v; want the stranger's (%v, %d bytes)", l, dur, data)
	}
	if s.limit == nil || !s.started || s.left != data || ws.rd.IsZero() || ws.wd.IsZero() {
		t.Fatalf("limit %v started %v left %d deadlines %v %v: the stranger limit is not enforced", s.limit, s.started, s.left, ws.rd, ws.wd)
	}
	if h.metrics.members.Load() != 0 {
		t.Fatal("counted as a member circuit")
	}
}
