package routing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
)

// Fakes for writer tests: a stream that records writes on an open
// connection, a log handler that signals one message.

// wantMessages decodes the frames in wire and fails t unless they carry
// exactly want, in order.
func wantMessages(t *testing.T, r *Router, wire io.Reader, want ...any) {
	t.Helper()
	fr := codec.NewFrameReader(wire, r.cfg.MaxFrame)
	var got []any
	for {
		var env codec.Envelope
		v, err := fr.ReadMessage(r.cfg.Registry, &env)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		msg, _, err := fromValue(&env, v)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("on the stream: %+v, want %+v", got, want)
	}
}

// fakeStream is the part of a network.Stream that a writer uses: writes go
// to w, or fail with err; its connection stays open.
type fakeStream struct {
	network.Stream
	w   io.Writer
	err error
}

func (f *fakeStream) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	return f.w.Write(p)
}

func (f *fakeStream) SetWriteDeadline(time.Time) error { return nil }

func (f *fakeStream) Reset() error { return nil }

func (f *fakeStream) Close() error { return nil }

func (f *fakeStream) Conn() network.Conn { return openConn{} }

type openConn struct{ network.Conn }

func (openConn) IsClosed() bool { return false }

// Stat: a direct connection (not limited by a relay).
func (openConn) Stat() network.ConnStats { return network.ConnStats{} }

// use gives w the stream s, as opening it would.
func (w *writer) use(s network.Stream) {
	w.s, w.pw = s, &progressWriter{s: s}
	w.fw = codec.NewFrameWriter(w.pw, w.l.r.cfg.MaxFrame)
}

func monitorMsg(id actor.MonitorID) outMsg {
	return outMsg{to: "sink", from: "source", msg: transport.MonitorSignal{ID: id}}
}

// onMessage is a slog.Handler that signals on ch each record whose message
// is msg, at every level.
type onMessage struct {
	msg string
	ch  chan<- struct{}
}

func (onMessage) Enabled(context.Context, slog.Level) bool { return true }

func (h onMessage) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

func (h onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h onMessage) WithGroup(string) slog.Handler { return h }

// recvWithin returns what ch gives, failing t if ctx ends first.
func recvWithin[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %T", *new(T))
		panic("unreachable")
	}
}
