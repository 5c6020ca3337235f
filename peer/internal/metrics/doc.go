// Package metrics is Troupe's Prometheus metrics of a node (troupe_*,
// listed in docs/cli.md): their names, help and kinds, and a Collector
// that exports a Sample of the node's counters, read at each scrape.
//
// It owns nothing but the metric descriptions; the counters are the
// node's (atomics in the router, the actor system, the relay), which the
// node reads into a Sample through the func given to New.
//
// # Goroutines and locks
//
// None: Collect runs on the scraper's goroutine and calls the sample
// func there.
package metrics
