// Package cli holds what the commands of the troupe binary share: their
// flags and arguments (Flags, ParseArgs, HomeFlag, ListFlag), how a
// command fails (Fail: one line, exit code 1 or 2), the text of errors
// said once (SayOnce, DialCause, Trimmed), remote text made safe to print
// on one line (Clean), JSON output (MarshalJSON, CompactJSON), the home
// directory (Home: its files, the default config.json it creates, and its
// lock), and LockedWriter, which serializes lines written from several
// goroutines.
//
// It owns no state but the home's lock file, held by whoever called
// Home.Lock. It imports config and the module's public packages.
package cli
