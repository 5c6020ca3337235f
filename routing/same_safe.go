//go:build nounsafe

package routing

// sameString is a == b. (The default build first compares where the
// strings are in memory, which needs unsafe.)
func sameString(a, b string) bool { return a == b }
