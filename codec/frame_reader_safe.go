//go:build nounsafe

package codec

// setString stores s in *dst. (The default build skips the store when
// *dst already is s in memory, which needs unsafe to tell.)
func setString(dst *string, s string) { *dst = s }

// setBytes stores b in *dst. (The default build skips the store when
// *dst already is b.)
func setBytes(dst *[]byte, b []byte) { *dst = b }
