package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
)

// Messages of the remote Troupe workloads, registered on both peers.
type (
	rPing struct{ N int }    // ask request; also the one-way hello (N = total)
	rPong struct{ N int }    // ask reply
	rAck  struct{ Upto int } // one-way: messages received in order so far; -1: broken
	rBlob struct{ Data []byte }
)

// Protocols of the raw libp2p baseline.
const (
	rawEchoProto protocol.ID = "/bench/echo/1.0.0"
	rawSinkProto protocol.ID = "/bench/sink/1.0.0"
)

// newRemoteTroupe starts a Troupe node on listen (host:port), TCP only,
// with the workloads' types registered.
func newRemoteTroupe(listen string) (*peer.Node, error) {
	host, port, err := splitListen(listen)
	if err != nil {
		return nil, err
	}
	reg, err := codec.NewRegistry()
	if err != nil {
		return nil, err
	}
	codec.MustRegister[rPing](reg, "compare.Ping")
	codec.MustRegister[rPong](reg, "compare.Pong")
	codec.MustRegister[rAck](reg, "compare.Ack")
	codec.MustRegister[rBlob](reg, "compare.Blob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return peer.New(ctx,
		peer.WithListenAddrs(fmt.Sprintf("/ip4/%s/tcp/%d", host, port)),
		peer.WithRegistry(reg),
		peer.WithLogger(slog.New(slog.DiscardHandler)),
	)
}

func closeNode(n *peer.Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.Close(ctx)
}

// troupeServe runs the receiving side of every Troupe and raw workload: the
// actors "sink" and "echo", and the raw protocols' handlers.
func troupeServe(listen string) (string, func() error, error) {
	n, err := newRemoteTroupe(listen)
	if err != nil {
		return "", nil, err
	}
	sys := n.System()
	_, err1 := sys.Spawn("sink", rSink)
	_, err2 := sys.Spawn("echo", rEcho)
	if err := errors.Join(err1, err2); err != nil {
		_ = closeNode(n)
		return "", nil, err
	}
	n.Host().SetStreamHandler(rawEchoProto, rawEcho)
	n.Host().SetStreamHandler(rawSinkProto, rawSink)
	return n.Addrs()[0].String(), func() error { return closeNode(n) }, nil
}

// rEcho answers every rPing with an rPong of the same number.
func rEcho(c *actor.Context) {
	var h actor.Case
	h = actor.On(func(p rPing) { c.Reply(rPong(p)); c.Receive(h) })
	c.Receive(h)
}

// rSink runs one-way runs one after another: an rPing{total} from the
// source, then total rBlobs in sequence; it sends the source rAck{n} after
// every window and after the last, and rAck{-1} on a missing, reordered or
// malformed message.
func rSink(c *actor.Context) {
	c.Receive(actor.On(func(p rPing) {
		total, next, src := p.N, 0, c.Sender()
		var h actor.Case
		h = actor.On(func(m rBlob) {
			if len(m.Data) != remoteBody || binary.LittleEndian.Uint64(m.Data) != uint64(next) {
				c.Send(src, rAck{-1})
				rSink(c)
				return
			}
			next++
			if next%remoteWindow == 0 || next == total {
				c.Send(src, rAck{next})
			}
			if next == total {
				rSink(c)
				return
			}
			c.Receive(h)
		})
		c.Receive(h)
	}))
}

// rSource sends total 100-byte rBlobs to sink, at most remoteWindows
// windows ahead of the acks, and reports on done once the last was acked.
func rSource(sink actor.Ref, total int, done chan<- error) actor.Behavior {
	return func(c *actor.Context) {
		c.Send(sink, rPing{total})
		sent := 0
		window := func() {
			for end := min(sent+remoteWindow, total); sent < end; sent++ {
				d := make([]byte, remoteBody)
				binary.LittleEndian.PutUint64(d, uint64(sent))
				c.Send(sink, rBlob{d})
			}
		}
		for i := 0; i < remoteWindows && sent < total; i++ {
			window()
		}
		var h actor.Case
		h = actor.On(func(a rAck) {
			switch {
			case a.Upto < 0:
				done <- errors.New("sink saw a missing or reordered message")
				return
			case a.Upto == total:
				done <- nil
				return
			}
			window()
			c.Receive(h)
		})
		c.Receive(h)
	}
}

// dialTroupe starts a client node and connects it to the server at addr.
func dialTroupe(listen, addr string) (*peer.Node, libp2ppeer.ID, error) {
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return nil, "", err
	}
	ai, err := libp2ppeer.AddrInfoFromP2pAddr(m)
	if err != nil {
		return nil, "", err
	}
	n, err := newRemoteTroupe(listen)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Connect(ctx, *ai); err != nil {
		_ = closeNode(n)
		return nil, "", err
	}
	return n, ai.ID, nil
}

func troupeClient(listen, addr, work string, total, warm int) (res remoteResult, err error) {
	n, server, err := dialTroupe(listen, addr)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, closeNode(n)) }()
	sys := n.System()
	echo, _ := peer.Ref(server, "echo")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Warm up: the first ask opens the streams both ways.
	if _, err := sys.Ask(ctx, echo, rPing{-1}); err != nil {
		return res, fmt.Errorf("warm-up ask: %w", err)
	}
	switch work {
	case "ask":
		lat := make([]time.Duration, 0, total)
		for i := range total {
			t0 := time.Now()
			v, err := sys.Ask(ctx, echo, rPing{i})
			lat = append(lat, time.Since(t0))
			if err != nil || v != (rPong{i}) {
				return res, fmt.Errorf("ask %d: %v, %v", i, v, err)
			}
		}
		res.P50, res.P99 = percentiles(lat)
	case "oneway", "blast":
		sink, _ := peer.Ref(server, "sink")
		run := troupeOneWay
		if work == "blast" {
			run = troupeBlast
		}
		if warm > 0 {
			if err := run(ctx, n, sink, "warm-"+work, warm); err != nil {
				return res, fmt.Errorf("warm-up: %w", err)
			}
		}
		t0 := workloadStart()
		if err := run(ctx, n, sink, work, total); err != nil {
			return res, err
		}
		workloadEnd(&res, total, t0)
		if st := n.Router().Stats(); st.LinkFull != 0 || st.Undeliverable != 0 || sys.DeadLetters() != 0 {
			return res, fmt.Errorf("messages lost: %d dead letters, stats %+v", sys.DeadLetters(), st)
		}
	default:
		return res, fmt.Errorf("unknown workload %q", work)
	}
	return res, nil
}

// troupeOneWay runs the windowed one-way workload: an actor named name
// sends total messages to sink.
func troupeOneWay(ctx context.Context, n *peer.Node, sink actor.Ref, name string, total int) error {
	done := make(chan error, 1)
	if _, err := n.System().Spawn(name, rSource(sink, total, done)); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("one-way: timed out; stats %+v", n.Router().Stats())
	}
}

// troupeBlast runs the blast workload, without flow control: plain code
// sends total messages with SendCtx, which waits for space in the link
// queue (backpressure); a waiter actor named name introduces itself to the
// sink and gets the acks.
func troupeBlast(ctx context.Context, n *peer.Node, sink actor.Ref, name string, total int) error {
	done, ready := make(chan error, 1), make(chan struct{})
	if _, err := n.System().Spawn(name, rWaiter(sink, total, ready, done)); err != nil {
		return err
	}
	<-ready
	for i := range total {
		d := make([]byte, remoteBody)
		binary.LittleEndian.PutUint64(d, uint64(i))
		if err := n.SendCtx(ctx, sink, rBlob{d}); err != nil {
			return fmt.Errorf("blast, message %d: %w", i, err)
		}
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("blast: timed out; stats %+v", n.Router().Stats())
	}
}

// rWaiter announces a run of total messages to sink (the hello is queued
// before ready closes, so it precedes the blast on the stream) and reports
// on done once the sink acked the last.
func rWaiter(sink actor.Ref, total int, ready chan<- struct{}, done chan<- error) actor.Behavior {
	return func(c *actor.Context) {
		c.Send(sink, rPing{total})
		close(ready)
		var h actor.Case
		h = actor.On(func(a rAck) {
			switch {
			case a.Upto < 0:
				done <- errors.New("sink saw a missing or reordered message")
			case a.Upto == total:
				done <- nil
			default:
				c.Receive(h)
			}
		})
		c.Receive(h)
	}
}
