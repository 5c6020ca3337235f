// Package eventloop is Troupe's executor: a Group of Netty-style Loops.
//
// # Loops
//
// A Loop is one carrier goroutine with a lock-free multi-producer task queue
// and a timer heap. Other goroutines reach a loop only through Submit,
// Execute and Schedule, which are safe for concurrent use. A producer wakes
// the loop only when the loop really sleeps: the loop publishes its wake-up
// state (awake, or asleep until a deadline) in one atomic word, so a busy
// loop pays no wake-up cost at all. An idle loop can spin for a while
// before it parks (WithSpin); it does not by default, because on the 2-core
// machines measured spinning slowed cross-loop traffic down.
//
// A loop takes due timers, then runs the queued tasks in batches; it reads
// the clock only every 64 tasks to decide whether the batch has run long
// enough and timers must be looked at again.
//
// # Tasks
//
// A Task is an intrusive queue node that a long-lived object (an actor)
// embeds, so that submitting it allocates nothing. A task may be queued on at
// most one loop at a time; whoever submits it owns that rule (the actor
// runtime guarantees it with its scheduled flag). Execute wraps a plain func.
//
// A panic in a task is recovered once, by the loop: if the task's Runner
// implements Recoverer it is told (an actor turns the panic into its exit
// reason); otherwise the panic is logged. The loop lives on.
//
// # Blocking watchdog
//
// Each loop publishes a counter that is odd while a task runs. A watchdog
// goroutine per group looks at it every half threshold; a task seen running
// across two looks (longer than the threshold, 100 ms by default) is
// declared blocked. Its loop's queue and timers go to a fresh carrier
// goroutine, the event is logged with the task's name and counted, and the
// blocked call keeps running on the old carrier, which retires when the call
// returns. The task itself is never run twice at once: whatever submits it
// (the actor's scheduled flag) still sees it running. The price: while the
// blocked call runs, that one task runs beside its loop's other tasks, so
// tasks must not share state with other tasks of their loop without
// synchronization unless the watchdog is off. A carrier that the Go
// scheduler merely preempted for longer than the threshold looks blocked
// too; the takeover is then needless but harmless.
//
// # Shutdown
//
// Group.Shutdown stops timers at once (none fire afterwards), keeps running
// tasks until the loops have been quiet for the quiet period, then stops
// accepting tasks (Submit returns ErrClosed). When the context ends first,
// the loops stop where they are and Shutdown reports the tasks it dropped.
package eventloop
