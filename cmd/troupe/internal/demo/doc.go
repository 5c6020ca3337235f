// Package demo is 'troupe demo' (Cmd): the paper's counter, whose
// states are case sets built once, and a ring of actors that a token goes
// around, run on an actor system of its own with no network.
//
// It owns no state beyond one run's actor system, shut down before Cmd
// returns. It imports cli and the module's public packages.
package demo
