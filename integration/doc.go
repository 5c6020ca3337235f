// Package integration holds tests across packages and processes: real
// libp2p hosts on 127.0.0.1, several peers per process, the troupe
// binary built and run as separate processes (process_test.go,
// cli_test.go), this test binary run as helper processes (startHelper,
// helperproc_test.go), and network namespaces for mDNS, NAT, partitions and
// healing (netns_*_test.go: as root with iproute2, and iptables for some;
// skipped otherwise unless TROUPE_NETNS_TESTS=required; -short skips
// those that build the binary). It has no non-test code; integration/compare
// is a module of its own that compares Troupe with Proto.Actor.
package integration
