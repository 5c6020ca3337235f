// Package integration holds tests across packages and processes: real
// libp2p hosts on 127.0.0.1, several peers per process, and (later) real
// binaries and network namespaces. It has no non-test code.
package integration
