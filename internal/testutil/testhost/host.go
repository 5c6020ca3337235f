package testhost

import (
	"testing"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
)

// ListenAddr is where a host from NewHost listens: loopback, any port.
const ListenAddr = "/ip4/127.0.0.1/tcp/0"

// NewHost returns a libp2p host listening on ListenAddr, without relay,
// closed when the test ends. Options in opts apply after those: a host
// given libp2p.NoListenAddrs listens nowhere. It fails the test if the
// host cannot be made. (go-libp2p maps NAT ports and runs mDNS only when
// asked to, which no test may do outside a network namespace.)
func NewHost(t testing.TB, opts ...libp2p.Option) host.Host {
	t.Helper()
	h, err := libp2p.New(append([]libp2p.Option{libp2p.ListenAddrStrings(ListenAddr), libp2p.DisableRelay()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// NewPeerID returns the ID of a made-up peer, from a new Ed25519 key.
func NewPeerID(t testing.TB) libp2ppeer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := libp2ppeer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
