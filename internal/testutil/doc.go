// Package testutil holds helpers that the tests of several packages
// share: a logger that discards, the process's CPU time for
// benchmarks' metrics, the check that an error line says nothing twice
// (RepeatedPhrase), and the one polling helper for conditions no event
// announces (Eventually, EventuallyNil: bounded, backing off, saying what
// was awaited when the wait fails; Within, the same poll for a
// measurement that reports rather than fails).
//
// # Imports
//
// It imports the standard library only, so that the tests of package
// actor, which knows nothing of libp2p, may use it. Helpers that need
// libp2p live in package testhost below it.
package testutil
