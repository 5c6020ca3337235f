package cli

import (
	"strings"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// Errors said once: each layer adds its context once, and the CLI's line
// names the peer or actor once. libp2p's dial errors repeat what the
// daemon's "connecting to <peer>" says ("peer: connect <peer>: failed to
// dial: failed to dial <peer>: all dials failed ..."); DialCause keeps
// what only they know.

// trimmedError is an error with a shorter text and the same chain.
type trimmedError struct {
	text string
	err  error
}

func (e *trimmedError) Error() string { return e.text }
func (e *trimmedError) Unwrap() error { return e.err }

// Trimmed is err with the text given: what the line says, with the chain
// (errors.Is, errors.As) of err.
func Trimmed(text string, err error) error { return &trimmedError{text: text, err: err} }

// DialCause is err of a dial to id without the prefixes that name the
// dial or the peer again; its lines (one per address tried) joined by
// "; ".
func DialCause(err error, id libp2ppeer.ID) error { return SayOnce(err, id.String()) }

// SayOnce is err without what the caller's context says already: the
// phrases of a dial to peer, and the peer's ID (the caller names it);
// its lines joined by "; ". The chain stays as it is.
func SayOnce(err error, peer string) error {
	text := err.Error()
	for _, p := range []string{"peer: connect " + peer + ": ", "failed to dial: ", "failed to dial " + peer + ": ", peer + ": "} {
		text = strings.ReplaceAll(text, p, "")
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "* ")); l != "" {
			lines = append(lines, l)
		}
	}
	text = strings.Join(lines, "; ")
	if text == err.Error() {
		return err
	}
	return &trimmedError{text: text, err: err}
}
