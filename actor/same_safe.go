//go:build nounsafe

package actor

// sameString is a == b. (The default build first compares where the
// strings are in memory, which needs unsafe.)
func sameString(a, b string) bool { return a == b }

// sameCase reports false: without unsafe, two Case values cannot be told
// to be the same word for word (== panics on cases that hold functions).
// Its only caller then stores a case that is already installed again,
// which changes nothing but the cost of a store.
func sameCase(a, b Case) bool { return false }

// before orders two actors for the tie rule of follow: by name (unique
// per system; the default build compares addresses, which needs unsafe).
func before(a, b *Context) bool { return a.ref < b.ref }
