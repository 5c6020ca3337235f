package eventloop

import "time"

// watch is the watchdog goroutine: every half threshold it looks at each
// loop's run counter; a task seen running at two consecutive looks has run
// for at least half the threshold, and one seen at three for the threshold.
func (g *Group) watch() {
	defer g.wg.Done()
	tick := time.NewTicker(g.cfg.watchdog / 2)
	defer tick.Stop()
	seen := make([]uint64, len(g.loops))
	ticks := make([]int, len(g.loops))
	for {
		select {
		case <-g.stopWatch:
			return
		case <-tick.C:
		}
		for i, l := range g.loops {
			v := l.run.Load()
			if v&1 == 0 || v != seen[i] {
				seen[i], ticks[i] = v, 0
				continue
			}
			if ticks[i]++; ticks[i] < 2 {
				continue
			}
			g.takeOver(l, v)
			seen[i], ticks[i] = 0, 0
		}
	}
}

// takeOver gives l to a fresh carrier if the task counted by v still runs.
func (g *Group) takeOver(l *Loop, v uint64) {
	if !l.run.CompareAndSwap(v, v+1) {
		return // the task returned just now
	}
	name := taskName(l.cur)
	g.replacements.Add(1)
	g.cfg.logger.Warn("eventloop: task blocked its loop; moving the loop to a fresh carrier",
		"loop", l.idx, "task", name, "threshold", g.cfg.watchdog)
	if g.cfg.onBlocked != nil {
		g.cfg.onBlocked(l.idx, name)
	}
	g.wg.Add(1)
	go l.carry()
}
