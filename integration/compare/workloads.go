package main

import (
	"fmt"
	"time"
)

// The two systems under comparison.
const (
	troupeSys = "troupe"
	protoSys  = "protoactor"
)

// config holds the sizes of one harness run.
type config struct {
	rounds    int           // A/B rounds per throughput workload
	memRounds int           // A/B rounds for the idle-memory workload
	dur       time.Duration // measuring window of the ping-pong workloads
	rings     []int         // ring sizes
	minHops   int           // a ring run passes the token max(minHops, laps*size) hops
	laps      int
	spawnN    int // actors per spawn run
	memN      int // actors per idle-memory run
	remoteN   int // messages per remote one-way run
	// remoteWarm is how many messages each remote one-way run sends
	// before the measured ones, on the same connection and actors, so that
	// the rows show the steady state (stream windows grown, heap sized).
	remoteWarm int
	askN       int // round trips per remote ask run
	timeout    time.Duration
}

func fullConfig(rounds int) config {
	return config{
		rounds: rounds, memRounds: rounds,
		dur:   time.Second,
		rings: []int{10_000, 100_000}, minHops: 1_000_000, laps: 10,
		spawnN: 1_000_000, memN: 1_000_000,
		remoteN: 1_000_000, remoteWarm: 1_000_000, askN: 20_000,
		timeout: 5 * time.Minute,
	}
}

func quickConfig(rounds int) config {
	return config{
		rounds: rounds, memRounds: rounds,
		dur:   150 * time.Millisecond,
		rings: []int{10_000, 100_000}, minHops: 200_000, laps: 1,
		spawnN: 50_000, memN: 50_000,
		remoteN: 200_000, remoteWarm: 200_000, askN: 2_000,
		timeout: time.Minute,
	}
}

// result is one measurement, in the unit of its workload, and the values of
// its extra rows from the same run.
type result struct {
	value float64
	extra []float64
	err   error
}

// runner runs the workloads on one actor system. Every method starts a
// fresh system and shuts it down before it returns.
type runner interface {
	// pingPong runs pairs ping-pong pairs with inflight messages in flight
	// per pair for about d and returns messages delivered per second (both
	// directions). colocated asks for the pair on one event loop where the
	// system has such a notion.
	pingPong(pairs, inflight int, d time.Duration, colocated bool) (float64, error)
	// ring passes a token hops times around a ring of n actors and returns
	// ns per hop, spawn and set-up excluded.
	ring(n, hops int) (float64, error)
	// spawn spawns n actors that each wait in a receive and returns actors
	// per second: until the last spawn call returned, or with untilStarted
	// until every actor's behavior ran.
	spawn(n int, untilStarted bool) (float64, error)
	// idleMemory spawns n named actors waiting in a one-case receive and
	// returns (HeapInuse+StackInuse) growth per actor once all started.
	idleMemory(n int) (float64, error)
}

func runnerFor(system string, timeout time.Duration) runner {
	return styledRunner(system, timeout, false, false)
}

// styledRunner is runnerFor with Troupe's actors written with reused cases
// and the ring colocated on one loop; Proto.Actor ignores both.
func styledRunner(system string, timeout time.Duration, reuse, colocate bool) runner {
	switch system {
	case troupeSys:
		return troupeRunner{timeout: timeout, reuse: reuse, colocate: colocate}
	case protoSys:
		return protoRunner{timeout: timeout}
	}
	panic("unknown system " + system)
}

// workload is one row of the table.
type workload struct {
	name   string
	unit   string
	higher bool    // higher values are better
	goal   float64 // the target; 0: none
	ratio  bool    // goal is a Troupe/Proto.Actor ratio, else an absolute value
	rounds int
	run    func(system string) result
	// systems the workload runs on: both when empty; a single system's
	// values go in the troupe column.
	systems []string
	// relTo names an earlier row: the goal is then goal × that row's
	// (troupe column) median.
	relTo string
	// extra rows filled from the same runs (result.extra, in order); only
	// their name, unit, higher and goal are used.
	extra []workload
}

// target describes the goal as text.
func (w workload) target() string {
	if w.goal == 0 {
		return "–"
	}
	op := "≤"
	if w.higher {
		op = "≥"
	}
	if w.ratio {
		return fmt.Sprintf("%s %g× Proto.Actor", op, w.goal)
	}
	if w.relTo != "" {
		return fmt.Sprintf("%s %g× the raw baseline", op, w.goal)
	}
	return fmt.Sprintf("%s %s", op, formatValue(w.goal, w.unit))
}

func wrap(v float64, err error) result { return result{value: v, err: err} }

// workloads returns the rows of the table, in order.
func workloads(cfg config) []workload {
	r := func(system string) runner { return runnerFor(system, cfg.timeout) }
	pp := func(name string, pairs, inflight int, colocated bool, goal float64) workload {
		return workload{
			name: name, unit: "msgs/s", higher: true, goal: goal, ratio: true, rounds: cfg.rounds,
			run: func(s string) result { return wrap(r(s).pingPong(pairs, inflight, cfg.dur, colocated)) },
		}
	}
	ppReuse := func(name string, pairs, inflight int, colocated bool, goal float64) workload {
		w := pp(name, pairs, inflight, colocated, goal)
		w.run = func(s string) result {
			return wrap(styledRunner(s, cfg.timeout, true, false).pingPong(pairs, inflight, cfg.dur, colocated))
		}
		return w
	}
	// Troupe in paper style against Proto.Actor actors that allocate as
	// much per round trip (the closures' bytes, as garbage): what the
	// garbage collector costs both, apart from the runtimes.
	ppGarbage := func(name string, pairs, inflight int) workload {
		w := pp(name, pairs, inflight, false, 0)
		w.run = func(s string) result {
			if s == protoSys {
				return wrap(protoRunner{timeout: cfg.timeout, garbage: true}.pingPong(pairs, inflight, cfg.dur, false))
			}
			return wrap(r(s).pingPong(pairs, inflight, cfg.dur, false))
		}
		return w
	}
	// withCost adds the rows of the CPU per message and the collections
	// per run (lastPairs) to a ping-pong row.
	withCost := func(w workload) workload {
		run := w.run
		w.run = func(s string) result {
			res := run(s)
			res.extra = []float64{lastPairs.cpuPerMsg, lastPairs.gcs}
			return res
		}
		w.extra = []workload{
			{name: "CPU per message, " + w.name, unit: "ns"},
			{name: "GC cycles per run, " + w.name, unit: "GCs"},
		}
		return w
	}
	// Troupe with each state's cases built once (actor.Cases).
	ppCases := func(name string, pairs, inflight int, goal float64) workload {
		w := pp(name, pairs, inflight, false, goal)
		w.run = func(s string) result {
			rr := r(s)
			if tr, ok := rr.(troupeRunner); ok {
				tr.cases = true
				rr = tr
			}
			return wrap(rr.pingPong(pairs, inflight, cfg.dur, false))
		}
		return w
	}
	ws := []workload{
		pp("ping-pong, 1 pair (Troupe cross-loop)", 1, 1, false, 11),
		pp("ping-pong, 1 pair (Troupe colocated)", 1, 1, true, 11),
		ppReuse("ping-pong, 1 pair (Troupe colocated, reused case)", 1, 1, true, 11),
		pp("8 pairs × 1 in flight", 8, 1, false, 0),
		withCost(pp("8 pairs × 100 in flight (Troupe paper style, a fresh case per message)", 8, 100, false, 1.0)),
		withCost(ppCases("8 pairs × 100 in flight (Troupe actor.Cases built once)", 8, 100, 2.0)),
		ppGarbage("8 pairs × 100 in flight (Proto.Actor allocating as much)", 8, 100),
		{
			name: "8 pairs × 100: paper-style closures alone, no actors (the floor)",
			unit: "msgs/s", higher: true, rounds: cfg.rounds, systems: []string{troupeSys},
			run: func(string) result { return wrap(paperClosures(cfg.dur)) },
		},
		withCost(ppReuse("8 pairs × 100 in flight (Troupe reused case)", 8, 100, false, 1.5)),
		ppReuse("8 pairs × 100 in flight (Troupe colocated, reused case)", 8, 100, true, 1.5),
	}
	for _, n := range cfg.rings {
		hops := max(cfg.minHops, cfg.laps*n)
		w := workload{
			name: fmt.Sprintf("ring of %s actors, %s hops", count(n), count(hops)),
			unit: "ns/hop", rounds: cfg.rounds,
			run: func(s string) result { return wrap(r(s).ring(n, hops)) },
		}
		if n == 100_000 {
			w.goal = 500
		}
		ws = append(ws, w)
		if n == 100_000 {
			ws = append(ws, workload{
				name: fmt.Sprintf("ring of %s actors, %s hops (Troupe colocated, reused case)", count(n), count(hops)),
				unit: "ns/hop", rounds: cfg.rounds, goal: 500,
				run: func(s string) result { return wrap(styledRunner(s, cfg.timeout, true, true).ring(n, hops)) },
			})
		}
	}
	ws = append(ws,
		workload{
			name: fmt.Sprintf("spawn %s (until Spawn returned)", count(cfg.spawnN)),
			unit: "actors/s", higher: true, goal: 1e6, rounds: cfg.rounds,
			run: func(s string) result { return wrap(r(s).spawn(cfg.spawnN, false)) },
		},
		workload{
			name: fmt.Sprintf("spawn %s (until all started)", count(cfg.spawnN)),
			unit: "actors/s", higher: true, rounds: cfg.rounds,
			run: func(s string) result { return wrap(r(s).spawn(cfg.spawnN, true)) },
		},
		workload{
			name: fmt.Sprintf("idle actor memory at %s", count(cfg.memN)),
			unit: "B/actor", goal: 300, rounds: cfg.memRounds,
			run: func(s string) result { return wrap(r(s).idleMemory(cfg.memN)) },
		},
	)
	return append(ws, remoteWorkloads(cfg)...)
}
