// Package testhost makes libp2p hosts and peer IDs for tests.
//
// # Staying on the machine
//
// A host from NewHost listens on 127.0.0.1 only (TCP, port 0), has no
// relay, no NAT port mapping and no mDNS, and knows no bootstrap peer:
// nothing it does unasked sends a packet off the machine.
package testhost
