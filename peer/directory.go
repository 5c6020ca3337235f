package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/network"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/troupe-mesh/troupe/actor"
	"github.com/troupe-mesh/troupe/discovery"
)

// ErrNoDirectory is returned by Directory.Await on a node without
// WithGroups, which keeps no directory.
var ErrNoDirectory = errors.New("peer: no directory (the node runs without WithGroups)")

// Directory is what the node knows of the other peers of its mesh from
// their advertisements. Safe for concurrent use.
type Directory struct{ d *discovery.Directory }

// Directory returns the node's directory; without WithGroups it is empty.
func (n *Node) Directory() Directory { return Directory{n.dir} }

// Peers returns the live advertisements of the other peers.
func (d Directory) Peers() []*discovery.Advertisement {
	if d.d == nil {
		return nil
	}
	return d.d.Peers()
}

// Lookup returns the Refs of the actors called name that other peers
// advertise.
func (d Directory) Lookup(name string) []actor.Ref {
	if d.d == nil {
		return nil
	}
	var out []actor.Ref
	for _, id := range d.d.Lookup(name) {
		if ref, err := Ref(id, name); err == nil {
			out = append(out, ref)
		}
	}
	return out
}

// Await returns the Refs of the actors called name that other peers
// advertise, waiting until at least one is advertised or ctx is done. It
// fails at once with ErrNoDirectory on a node without WithGroups. Above
// the lookup threshold the directory holds the connected peers'
// advertisements only (Narrow): Node.Whereis finds a name anywhere.
func (d Directory) Await(ctx context.Context, name string) ([]actor.Ref, error) {
	if d.d == nil {
		return nil, ErrNoDirectory
	}
	for {
		updated := d.d.Updated()
		if refs := d.Lookup(name); len(refs) > 0 {
			return refs, nil
		}
		select {
		case <-updated:
		case <-ctx.Done():
			return nil, fmt.Errorf("peer: no advertisement of %q: %w", name, ctx.Err())
		}
	}
}

// Peers returns the IDs of the peers the node is connected to.
func (n *Node) Peers() []libp2ppeer.ID { return n.host.Network().Peers() }

// Whereis finds an actor called name anywhere in the mesh: on this node,
// in the directory (a connected peer's advertisement first), above the
// lookup threshold through the DHT (WithLookupAbove: providers of the
// name's key, each confirmed by the provider itself, answers cached),
// then by asking the connected peers, up to
// whereisAtOnce at a time, and taking the first that has it (a silent
// peer costs the others nothing). It returns an error wrapping
// actor.ErrNoSuchActor when none has it, joined with the errors of the
// peers that could not answer, or ctx's error.
func (n *Node) Whereis(ctx context.Context, name string) (actor.Ref, error) {
	if n.sys.InEventLoop() { // it may ask other peers: see Connect
		return actor.Ref{}, actor.ErrBlockingCall
	}
	if ref, ok := n.sys.Whereis(name); ok {
		return ref, nil
	}
	if refs := n.Directory().Lookup(name); len(refs) > 0 {
		// A connected peer first: anyone can sign advertisements of
		// made-up peers whose IDs sort first.
		for _, ref := range refs {
			if id, err := libp2ppeer.Decode(ref.Peer()); err == nil && n.host.Network().Connectedness(id) == network.Connected {
				return ref, nil
			}
		}
		return refs[0], nil
	}
	// Above the lookup threshold the directory holds only part of the
	// mesh: the DHT knows who provides the name.
	ref, err := n.lookupDHT(ctx, name)
	switch {
	case err == nil:
		return ref, nil
	case ctx.Err() != nil:
		return actor.Ref{}, ctx.Err()
	}
	peers := n.Peers()
	ask, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // the Lookups still out end at once
	}()
	type answer struct {
		ref actor.Ref
		err error
	}
	answers := make(chan answer, len(peers))
	slots := make(chan struct{}, whereisAtOnce)
	for _, id := range peers {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
				ref, err := n.Lookup(ask, id, name)
				answers <- answer{ref, err}
			case <-ask.Done():
				answers <- answer{err: ask.Err()}
			}
		})
	}
	var errs []error
	for range peers {
		a := <-answers
		switch {
		case a.err == nil:
			return a.ref, nil
		case ctx.Err() != nil:
			return actor.Ref{}, ctx.Err()
		case !errors.Is(a.err, actor.ErrNoSuchActor):
			errs = append(errs, a.err)
		}
	}
	return actor.Ref{}, errors.Join(append([]error{fmt.Errorf("%w: %q on no peer", actor.ErrNoSuchActor, name)}, errs...)...)
}

// whereisAtOnce is the most peers Whereis asks at the same time.
const whereisAtOnce = 16

// DirectoryRejected returns how many advertisements the node rejected
// (forged, unsigned, malformed or oversize).
func (n *Node) DirectoryRejected() uint64 {
	if n.dir == nil {
		return 0
	}
	return n.dir.Rejected()
}

// Stats returns the directory's counters (zero without WithGroups).
func (d Directory) Stats() discovery.DirectoryStats {
	if d.d == nil {
		return discovery.DirectoryStats{}
	}
	return d.d.Stats()
}

// Updated returns a channel closed when the directory next stores an
// advertisement (nil, which never fires, without WithGroups).
func (d Directory) Updated() <-chan struct{} {
	if d.d == nil {
		return nil
	}
	return d.d.Updated()
}

// Narrow reports whether the directory judges the mesh large (above the
// lookup threshold, WithLookupAbove): it is then off the advertisement
// topic and holds only the advertisements of the peers this node is
// connected to; Whereis finds the others' names through the DHT. False
// without WithGroups.
func (d Directory) Narrow() bool { return d.d != nil && d.d.Narrow() }
