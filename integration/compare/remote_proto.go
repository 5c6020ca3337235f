package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The remote Proto.Actor workloads use protobuf's well-known wrapper types
// (Proto.Actor's remote carries protobuf messages): Int64Value for the ask
// request and reply, the one-way hello (the total) and the acks, BytesValue
// for the 100-byte bodies, whose first 8 bytes carry the sequence number,
// as in Troupe's. Its default remote configuration: gRPC, insecure, batches
// of 1,000.

// newRemoteProto starts an actor system with a remote on listen.
func newRemoteProto(listen string) (*actor.ActorSystem, *remote.Remote, error) {
	host, port, err := splitListen(listen)
	if err != nil {
		return nil, nil, err
	}
	sys := newProto()
	r := remote.NewRemote(sys, remote.Configure(host, port))
	r.Start()
	return sys, r, nil
}

func stopProto(sys *actor.ActorSystem, r *remote.Remote) {
	r.Shutdown(false)
	sys.Shutdown()
}

// protoServe runs the receiving side: the actors "sink" and "echo".
func protoServe(listen string) (string, func() error, error) {
	sys, r, err := newRemoteProto(listen)
	if err != nil {
		return "", nil, err
	}
	_, err1 := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &pSink{} }), "sink")
	_, err2 := sys.Root.SpawnNamed(actor.PropsFromFunc(pEcho), "echo")
	if err := errors.Join(err1, err2); err != nil {
		stopProto(sys, r)
		return "", nil, err
	}
	return sys.Address(), func() error { stopProto(sys, r); return nil }, nil
}

// pEcho answers every request with the request itself.
func pEcho(ctx actor.Context) {
	if m, ok := ctx.Message().(*wrapperspb.Int64Value); ok {
		ctx.Respond(m)
	}
}

// pSink runs one-way runs one after another: a request with the total
// (its sender is the source), then total BytesValues in sequence; it sends
// the source the count after every window and after the last, and -1 on a
// missing, reordered or malformed message.
type pSink struct {
	src         *actor.PID
	total, next int64
	broken      bool
}

func (s *pSink) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *wrapperspb.Int64Value:
		*s = pSink{src: ctx.Sender(), total: m.Value}
	case *wrapperspb.BytesValue:
		if s.src == nil || s.broken {
			return
		}
		if len(m.Value) != remoteBody || binary.LittleEndian.Uint64(m.Value) != uint64(s.next) {
			s.broken = true
			ctx.Send(s.src, wrapperspb.Int64(-1))
			return
		}
		s.next++
		if s.next%remoteWindow == 0 || s.next == s.total {
			ctx.Send(s.src, wrapperspb.Int64(s.next))
		}
	}
}

// pSource sends total BytesValues to sink, at most remoteWindows windows
// ahead of the acks, and reports on done once the last was acked.
type pSource struct {
	sink        *actor.PID
	total, sent int
	done        chan<- error
}

func (s *pSource) window(ctx actor.Context) {
	for end := min(s.sent+remoteWindow, s.total); s.sent < end; s.sent++ {
		d := make([]byte, remoteBody)
		binary.LittleEndian.PutUint64(d, uint64(s.sent))
		ctx.Send(s.sink, wrapperspb.Bytes(d))
	}
}

func (s *pSource) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Request(s.sink, wrapperspb.Int64(int64(s.total)))
		for i := 0; i < remoteWindows && s.sent < s.total; i++ {
			s.window(ctx)
		}
	case *wrapperspb.Int64Value:
		switch {
		case m.Value < 0:
			s.done <- errors.New("sink saw a missing or reordered message")
		case m.Value == int64(s.total):
			s.done <- nil
		default:
			s.window(ctx)
		}
	}
}

func protoClient(listen, addr, work string, total, warm int) (res remoteResult, err error) {
	sys, r, err := newRemoteProto(listen)
	if err != nil {
		return res, err
	}
	defer stopProto(sys, r)
	echo := actor.NewPID(addr, "echo")
	ask := func(i int64) error {
		v, err := sys.Root.RequestFuture(echo, wrapperspb.Int64(i), 10*time.Second).Result()
		if err != nil {
			return err
		}
		if m, ok := v.(*wrapperspb.Int64Value); !ok || !proto.Equal(m, wrapperspb.Int64(i)) {
			return fmt.Errorf("ask %d: reply %v", i, v)
		}
		return nil
	}
	// Warm up: the first request connects both ways.
	if err := ask(-1); err != nil {
		return res, fmt.Errorf("warm-up ask: %w", err)
	}
	switch work {
	case "ask":
		lat := make([]time.Duration, 0, total)
		for i := range total {
			t0 := time.Now()
			err := ask(int64(i))
			lat = append(lat, time.Since(t0))
			if err != nil {
				return res, err
			}
		}
		res.P50, res.P99 = percentiles(lat)
	case "oneway", "blast":
		sink := actor.NewPID(addr, "sink")
		run := protoOneWay
		if work == "blast" {
			run = protoBlast
		}
		if warm > 0 {
			if err := run(sys, sink, warm); err != nil {
				return res, fmt.Errorf("warm-up: %w", err)
			}
		}
		t0 := workloadStart()
		if err := run(sys, sink, total); err != nil {
			return res, err
		}
		workloadEnd(&res, total, t0)
	default:
		return res, fmt.Errorf("unknown workload %q", work)
	}
	return res, nil
}

// protoOneWay runs the windowed one-way workload: a source actor sends
// total messages to sink.
func protoOneWay(sys *actor.ActorSystem, sink *actor.PID, total int) error {
	done := make(chan error, 1)
	sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &pSource{sink: sink, total: total, done: done}
	}))
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Minute):
		return errors.New("one-way: timed out")
	}
}

// protoBlast runs the blast workload, without flow control: plain code
// sends total messages with Root.Send (Proto.Actor's queues are unbounded);
// a waiter actor introduces itself to the sink and gets the acks.
func protoBlast(sys *actor.ActorSystem, sink *actor.PID, total int) error {
	done, ready := make(chan error, 1), make(chan struct{})
	sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &pWaiter{sink: sink, total: int64(total), ready: ready, done: done}
	}))
	<-ready
	for i := range total {
		d := make([]byte, remoteBody)
		binary.LittleEndian.PutUint64(d, uint64(i))
		sys.Root.Send(sink, wrapperspb.Bytes(d))
	}
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Minute):
		return errors.New("blast: timed out")
	}
}

// pWaiter announces a run of total messages to sink and reports on done
// once the sink acked the last.
type pWaiter struct {
	sink  *actor.PID
	total int64
	ready chan<- struct{}
	done  chan<- error
}

func (w *pWaiter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Request(w.sink, wrapperspb.Int64(w.total))
		close(w.ready)
	case *wrapperspb.Int64Value:
		switch {
		case m.Value < 0:
			w.done <- errors.New("sink saw a missing or reordered message")
		case m.Value == w.total:
			w.done <- nil
		}
	}
}
