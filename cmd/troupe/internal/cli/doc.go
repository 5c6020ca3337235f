// Package cli holds what the commands of the troupe binary share: the
// text of errors said once (SayOnce, DialCause, Trimmed), remote text made
// safe to print on one line (Clean), and JSON output (MarshalJSON,
// CompactJSON).
//
// It owns no state and imports only the module's public packages.
package cli
