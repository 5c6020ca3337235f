package actor

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// meter measures the process's CPU time and collections over a run.
type meter struct {
	cpu time.Duration
	gcs uint32
}

func startMeter() meter {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return meter{cpu: processCPU(), gcs: ms.NumGC}
}

// report adds the CPU time per message (all goroutines: the loops', the
// collector's) and the collections per million messages.
func (m meter) report(b *testing.B, msgs int) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if cpu := processCPU() - m.cpu; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(msgs), "cpu-ns/msg")
	}
	b.ReportMetric(float64(ms.NumGC-m.gcs)*1e6/float64(msgs), "gc/Mmsg")
}

// BenchmarkGCFloor: the 8x100 rows of both idioms with the GC heap floor
// off and at its default, interleaved by -count.
func BenchmarkGCFloor(b *testing.B) {
	for _, floor := range []int64{0, DefaultGCHeapFloor} {
		name := "floor=" + strconv.FormatInt(floor>>20, 10) + "MiB"
		b.Run("8x100/paper/"+name, func(b *testing.B) {
			benchPairsWith(b, 8, 100, false, pongPaper, pingPaper, WithGCHeapFloor(floor))
		})
		b.Run("8x100/cases/"+name, func(b *testing.B) {
			benchPairsWith(b, 8, 100, false, pongCases, pingCases, WithGCHeapFloor(floor))
		})
	}
}

// pongCases and pingCases are the pairs in the idiom of Cases: each
// state's cases (two, as an actor that can also be stopped has) built
// once, state in variables of the actor.
func pongCases(c *Context) {
	var serving Case
	serving = Cases(
		On(func(p ping) { c.Send(c.Sender(), p); c.Receive(serving) }),
		On(func(struct{}) { c.Stop() }),
	)
	c.Receive(serving)
}

func pingCases(c *Context, pong Ref, inflight, total int, done chan<- struct{}) {
	for i := 0; i < inflight && i < total; i++ {
		c.Send(pong, ping{i})
	}
	got, sent := 0, inflight
	var playing Case
	playing = Cases(
		On(func(p ping) {
			if got++; got == total {
				done <- struct{}{}
				return
			}
			if sent < total {
				sent++
				c.Send(pong, p)
			}
			c.Receive(playing)
		}),
		On(func(struct{}) { c.Stop() }),
	)
	c.Receive(playing)
}
