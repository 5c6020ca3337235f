package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/internal/testutil"
)

// Remote benchmarks: two peers in this process, connected over TCP on
// 127.0.0.1. The same workloads across two OS processes, and on Proto.Actor's
// remote, are in integration/compare (go run . -run remote).

const (
	benchBody = 100 // bytes of message body
	// The sink acks every benchWindow messages and the source keeps at most
	// benchWindows windows unacknowledged: 40,000 messages, below the link
	// queue's 65,536, so no message can become a "link full" dead letter.
	benchWindow  = 10_000
	benchWindows = 4
)

// seqBlob returns a 100-byte Blob whose first 8 bytes carry seq.
func seqBlob(seq int) Blob {
	d := make([]byte, benchBody)
	binary.LittleEndian.PutUint64(d, uint64(seq))
	return Blob{Data: d}
}

// oneWaySink expects a Ping{N: total} from its source, then total Blobs in
// sequence; it answers the source with Ack{n} after every window and after
// the last, and with Ack{-1} (then stops) on a missing, reordered or
// malformed message.
func oneWaySink(c *actor.Context) {
	c.Receive(actor.On(func(p Ping) {
		total, next, src := p.N, 0, c.Sender()
		var h actor.Case
		h = actor.On(func(m Blob) {
			if len(m.Data) != benchBody || binary.LittleEndian.Uint64(m.Data) != uint64(next) {
				c.Send(src, Ack{-1})
				return
			}
			next++
			if next%benchWindow == 0 || next == total {
				c.Send(src, Ack{next})
			}
			if next == total {
				return
			}
			c.Receive(h)
		})
		c.Receive(h)
	}))
}

// oneWaySource sends total Blobs to sink, at most benchWindows windows
// ahead of the sink's Acks, and reports on done when the last was acked.
func oneWaySource(sink actor.Ref, total int, done chan<- error) actor.Behavior {
	return func(c *actor.Context) {
		c.Send(sink, Ping{N: total})
		sent := 0
		window := func() {
			for end := min(sent+benchWindow, total); sent < end; sent++ {
				c.Send(sink, seqBlob(sent))
			}
		}
		for i := 0; i < benchWindows && sent < total; i++ {
			window()
		}
		var h actor.Case
		h = actor.On(func(a Ack) {
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

// BenchmarkRemoteOneWay: one actor on node a sends b.N 100-byte messages to
// one actor on node b, windowed; msgs/s from the first send until the sink
// acknowledged the last, all received in order.
func BenchmarkRemoteOneWay(b *testing.B) {
	na, nb := pair(b)
	sink := spawn(b, nb, "sink", oneWaySink)
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), testutil.ProcessCPU()
	spawn(b, na, "source", oneWaySource(sink, b.N, done))
	select {
	case err := <-done:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(5 * time.Minute):
		b.Fatalf("timed out; stats a=%+v b=%+v", na.Router().Stats(), nb.Router().Stats())
	}
	el, cpu := time.Since(start), testutil.ProcessCPU()-cpu0
	b.StopTimer()
	if st := na.Router().Stats(); st.LinkFull != 0 || st.Undeliverable != 0 {
		b.Fatalf("sender lost messages: %+v", st)
	}
	if dl := na.System().DeadLetters() + nb.System().DeadLetters(); dl != 0 {
		b.Fatalf("%d dead letters", dl)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "msgs/s")
	// CPU time of the whole process (both peers) per message: unlike the
	// rate, it hardly depends on what else runs on the machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/msg")
}

// BenchmarkRemoteAsk: b.N sequential System.Ask round trips from plain code
// on node a to an echo actor on node b.
func BenchmarkRemoteAsk(b *testing.B) {
	na, nb := pair(b)
	echoRef := spawn(b, nb, "echo", echo)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Warm up: the first ask opens the streams.
	if _, err := na.System().Ask(ctx, echoRef, Ping{-1}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		v, err := na.System().Ask(ctx, echoRef, Ping{i})
		lat = append(lat, time.Since(t0))
		if err != nil || v != (Pong{i}) {
			b.Fatalf("ask %d: %v, %v", i, v, err)
		}
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// benchEchoProto is the raw stream baseline's own protocol.
const benchEchoProto protocol.ID = "/bench/echo/1.0.0"

// BenchmarkRawStreamRTT is the baseline for BenchmarkRemoteAsk: the same two
// kinds of libp2p hosts, one long-lived stream, a 100-byte frame (1-byte
// length prefix and body) written and read back b.N times.
func BenchmarkRawStreamRTT(b *testing.B) {
	na, nb := pair(b)
	nb.Host().SetStreamHandler(benchEchoProto, func(s network.Stream) {
		defer s.Close()
		buf := make([]byte, 1+benchBody)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			if _, err := s.Write(buf); err != nil {
				_ = s.Reset()
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := na.Host().NewStream(ctx, nb.ID(), benchEchoProto)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	out, in := make([]byte, 1+benchBody), make([]byte, 1+benchBody)
	out[0] = benchBody
	rtt := func(i int) error {
		binary.LittleEndian.PutUint64(out[1:], uint64(i))
		if _, err := s.Write(out); err != nil {
			return err
		}
		if _, err := io.ReadFull(s, in); err != nil {
			return err
		}
		if binary.LittleEndian.Uint64(in[1:]) != uint64(i) {
			return fmt.Errorf("echo %d: wrong frame", i)
		}
		return nil
	}
	if err := rtt(-1); err != nil { // warm up
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		err := rtt(i)
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// reportLatency reports the median and 99th percentile of lat in µs.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	q := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}
