package routing

import "time"

// timings are the waits of a Router (config.timings) that tests shorten.
// No option sets them, so only this package's tests do; a zero field
// takes its default (defaultTimings), which is all that New ever sees
// from another package.
type timings struct {
	// backoffUnit is half a writer's first wait before it dials again
	// (see dialState).
	backoffUnit time.Duration
	// stallTimeout is how long an inbound stream may stop in the middle
	// of a frame or of a large message (see stallGuard). A writer breaks
	// its own stream after writeTimeout without progress, the same.
	stallTimeout time.Duration
	// wholeBase and wholeRate bound the time a whole frame or large
	// message may take to arrive: wholeBase + its size / wholeRate (bytes
	// a second), however often bytes come (see stallGuard).
	wholeBase time.Duration
	wholeRate int
	// lossWait bounds the wait of a user stream's reader for the lostBody
	// that its hello, or a reset of the peer's last stream here,
	// announces (see awaitLoss).
	lossWait time.Duration
	// retireDelays are the waits before retire tries a link again: one
	// that was busy when its peer disconnected, or at its try since (its
	// writers were giving up what they held, which takes three dials),
	// is tried after each in turn. The first is also the wait before the
	// first try of a link that gave messages up as unreachable while its
	// peer was not connected (peertable_retire.go).
	retireDelays [3]time.Duration
	// logEvery is the interval between two log lines of one kind of
	// protocol error of one peer (see loglimit.go).
	logEvery time.Duration
	// replyStall is how long our user link to a peer must take no bytes
	// before the peer asking through it is paused (see replypause.go).
	replyStall time.Duration
}

// defaultTimings returns the timings outside tests.
func defaultTimings() timings {
	return timings{
		backoffUnit:  50 * time.Millisecond,
		stallTimeout: writeTimeout,
		wholeBase:    10 * time.Second,
		wholeRate:    defaultWholeRate,
		lossWait:     5 * time.Second,
		retireDelays: [3]time.Duration{time.Second, 5 * time.Second, 30 * time.Second},
		logEvery:     logEvery,
		replyStall:   defaultStallAfter,
	}
}

// withDefaults returns t with each zero field (retireDelays as a whole)
// set to its default.
func (t timings) withDefaults() timings {
	d := defaultTimings()
	if t.backoffUnit <= 0 {
		t.backoffUnit = d.backoffUnit
	}
	if t.stallTimeout <= 0 {
		t.stallTimeout = d.stallTimeout
	}
	if t.wholeBase <= 0 {
		t.wholeBase = d.wholeBase
	}
	if t.wholeRate <= 0 {
		t.wholeRate = d.wholeRate
	}
	if t.logEvery <= 0 {
		t.logEvery = d.logEvery
	}
	if t.lossWait <= 0 {
		t.lossWait = d.lossWait
	}
	if t.replyStall <= 0 {
		t.replyStall = d.replyStall
	}
	if t.retireDelays == ([3]time.Duration{}) {
		t.retireDelays = d.retireDelays
	}
	return t
}

// hooks run at points of a Router's work where tests need to act or to
// wait. Each is nil outside tests; tests set them on their own router
// (Router.hooks), before the traffic that runs them.
type hooks struct {
	// linkFound runs when link finds a peer's link without the router's
	// lock: where a link can be retired under a sender.
	linkFound func(*link)
	// inboundFlush runs before a reader hands on a batch it decoded.
	inboundFlush func(*inbound)
	// superseded runs once a reader reset the streams its own supersedes.
	superseded func()
	// awaitLoss runs when a reader starts to wait in awaitLoss.
	awaitLoss func()
	// lossMessage runs once a reader handled a lostBody or a resetBody.
	lossMessage func()
}

// defaultWholeRate is the rate below which a frame or large message is
// too slow (see stallGuard): 128 KiB/s, 1 Mbit/s, so a 4 MiB message may
// take 42 s with wholeBase.
const defaultWholeRate = 128 << 10
