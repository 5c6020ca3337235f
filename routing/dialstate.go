package routing

import "time"

// A writer's dial and its retries, as a pure value: what happened to the
// dial (dialEvent) in, what the writer does next (dialAction) out. The
// writer goroutine drives it (runDial, writer.dial): it opens the stream,
// waits, and acts on the outcome; it keeps its writing right throughout
// (linkstate.go).

// maxDials is how many times a writer tries to open its stream before it
// gives up what it has in hand as unreachable.
const maxDials = 3

// dialEvent is what happens to a writer's dial.
type dialEvent uint8

const (
	dialStart  dialEvent = iota // the writer needs a stream
	dialFailed                  // an attempt failed
	dialOpened                  // an attempt opened the stream
	dialWaited                  // the wait between two attempts ended
	dialClosed                  // the router closes (during a wait)
)

// dialDo is what a writer does next about its dial.
type dialDo uint8

const (
	doDial   dialDo = iota // try to open the stream now
	doWait                 // wait dialAction.wait, then try again
	doUse                  // the stream is open: write on it
	doGiveUp               // unreachable: fail what is in hand, drop the cancellations, tell the router
	doAbort                // the router closes: what is in hand is lost; the writer returns
)

// dialAction is a dial's next step: do, and for doDial the attempt's
// number (from 1), for doWait how long.
type dialAction struct {
	do      dialDo
	attempt int
	wait    time.Duration
}

// dialState is one dial of a writer, from dialStart to doUse, doGiveUp
// or doAbort. unit is half the first wait (timings.backoffUnit): after
// failed attempt n the writer waits unit<<n, 100 ms and then 200 ms by
// default. (Between dials, libp2p's own dial backoff keeps an address
// that failed from being dialed again for a few seconds; clearBackoff
// lifts it for a queued message.)
type dialState struct {
	unit   time.Duration
	failed int // attempts that failed
}

// step applies ev to d and returns what the writer does next.
func (d *dialState) step(ev dialEvent) dialAction {
	switch ev {
	case dialStart:
		d.failed = 0
		return dialAction{do: doDial, attempt: 1}
	case dialFailed:
		if d.failed++; d.failed >= maxDials {
			return dialAction{do: doGiveUp}
		}
		return dialAction{do: doWait, wait: d.unit << d.failed}
	case dialWaited:
		return dialAction{do: doDial, attempt: d.failed + 1}
	case dialOpened:
		return dialAction{do: doUse}
	}
	return dialAction{do: doAbort} // dialClosed
}
