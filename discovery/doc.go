// Package discovery finds other Troupe peers without configuration.
//
// # LAN
//
// StartMDNS announces the host over multicast DNS under a service name
// derived from the mesh name, so that two meshes on one LAN stay apart, and
// connects to every peer it hears of (its own announcements are ignored).
// Announcements arrive repeatedly and concurrently; they are handed to a
// bounded queue and two worker goroutines, so a burst of them costs no
// goroutine per announcement, and a peer is dialed at most once per 5 s.
//
// mDNS needs an interface with the MULTICAST flag and a non-loopback listen
// address. Tests run it only inside network namespaces they create: on a
// CI machine the default interface leads off the machine.
//
// The DHT, advertisements and groups are the next steps of this package.
package discovery
