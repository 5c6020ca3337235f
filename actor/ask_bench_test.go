package actor

import (
	"context"
	"testing"
)

// BenchmarkSystemAsk measures an Ask from plain Go code to a local actor:
// one goroutine at a time (serial), and as many as GOMAXPROCS asking at
// once (parallel), which is where the waiters meet on the reply table.
func BenchmarkSystemAsk(b *testing.B) {
	s := newSys(b)
	echo := mustSpawn(b, s, "echo", echoBehavior)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Ask(ctx, echo, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Ask(ctx, echo, 1); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
