package integration

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/peer"
	"github.com/troupe-mesh/troupe/routing"
)

// BenchmarkAskSharedActorFlooded measures fairness at a shared actor
// (issue 34 item 3): an honest peer asks echo while another peer writes
// Pings to the same echo as fast as its stream takes them. Each
// sub-benchmark sets the per-sender-peer share of the actor's mailbox
// (transport.WithRemoteBacklog; the flood beyond it is dead letters) and
// reports the honest asks' p50 and p99 and the flood's rate; "none" is
// the same asks without a flood. b.N is the number of honest asks.
func BenchmarkAskSharedActorFlooded(b *testing.B) {
	for _, c := range []struct {
		name    string
		backlog int64
		flood   bool
	}{
		{"none", transport.DefaultRemoteBacklog, false},
		{"share16MiB", transport.DefaultRemoteBacklog, true},
		{"share1MiB", 1 << 20, true},
		{"share128KiB", 128 << 10, true},
	} {
		b.Run(c.name, func(b *testing.B) { benchAskFlooded(b, c.backlog, c.flood) })
	}
}

func benchAskFlooded(b *testing.B, backlog int64, flood bool) {
	target := newNode(b, peer.WithActorOptions(transport.WithRemoteBacklog(backlog)))
	hostile, honest := newNode(b), newNode(b)
	for _, n := range []*peer.Node{hostile, honest} {
		ctx, cancel := askCtx()
		if err := n.Connect(ctx, *target.AddrInfo()); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	echoRef := spawn(b, target, "echo", echo)
	ctx, cancel := askCtx()
	defer cancel()
	if _, err := honest.System().Ask(ctx, echoRef, Ping{0}); err != nil {
		b.Fatal(err)
	}
	var sent atomic.Int64
	stop := make(chan struct{})
	done := make(chan error, 1)
	if flood {
		fw := rawFlooder(b, hostile, target)
		reg := registry(b)
		_, body, err := reg.Encode(Ping{7})
		if err != nil {
			b.Fatal(err)
		}
		env := &codec.Envelope{Kind: codec.KindUser, To: "echo", FromName: "x", Type: "test.Ping", Body: body}
		go func() {
			for {
				select {
				case <-stop:
					done <- fw.Flush()
					return
				default:
				}
				for range 256 {
					if err := fw.WriteEnvelope(env); err != nil {
						done <- err
						return
					}
				}
				sent.Add(256)
			}
		}()
		time.Sleep(200 * time.Millisecond) // let the flood fill its share first: a rate, not a wait for an event
	}
	lat := make([]time.Duration, 0, b.N)
	start, sentBefore := time.Now(), sent.Load() // the rate is the flood's during the asks
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		actx, acancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := honest.System().Ask(actx, echoRef, Ping{i})
		acancel()
		if err != nil {
			b.Fatalf("honest ask %d: %v", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	elapsed, floodSent := time.Since(start), sent.Load()-sentBefore
	if flood {
		close(stop)
		<-done // a reset stream ends the flood too: either is fine here
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(floodSent)/elapsed.Seconds(), "flood-msg/s")
	b.ReportMetric(float64(target.System().DeadLetters()), "dead-letters")
}

// rawFlooder opens a compact message stream from n to target with a
// hello, as the peer's own writer would, for a benchmark to write
// envelopes on (rawWriterAs, for a testing.B).
func rawFlooder(b *testing.B, n, target *peer.Node) *codec.FrameWriter {
	ctx, cancel := askCtx()
	defer cancel()
	s, err := n.Host().NewStream(ctx, target.ID(), routing.ProtoMsg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Reset() })
	fw := codec.NewFrameWriter(s, 0, codec.WithCompact(true))
	body, err := cbor.Marshal(map[int]uint64{1: n.Router().Incarnation()})
	if err != nil {
		b.Fatal(err)
	}
	if err := fw.WriteEnvelope(&codec.Envelope{Kind: codec.KindSystem, Type: "troupe.hello", Body: body}); err != nil {
		b.Fatal(err)
	}
	return fw
}
