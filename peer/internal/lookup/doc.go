// Package lookup finds actor names through the DHT above the lookup
// threshold (peer.WithLookupAbove), for peer.Node.Whereis.
//
// It owns the cache of answers (found 30 s, not found 5 s, at most 1,024
// names) and the slots that bound the lookups in flight (4). It knows
// nothing of the node: Config gives it the DHT (Large, FindNameEach), a
// Connect to a provider and an Ask of a provider's $node, which confirms
// every answer: no provider's claim is trusted, and the Ref is made of
// the provider's own ID.
//
// # Goroutines
//
// None: a Find runs on its caller's goroutine, waiting for a slot.
//
// # Locks
//
// nameCache.mu guards the cached answers: a leaf lock, held for no call
// out.
package lookup
