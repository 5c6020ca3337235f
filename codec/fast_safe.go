//go:build nounsafe

package codec

import "github.com/fxamacker/cbor/v2"

// Built with the tag nounsafe, the codec has no fast path (fast.go,
// fast_decode.go and fast_codec.go read and write struct fields through
// unsafe pointers): every registered type takes the general path, which
// puts the same bytes on the wire.

// fastCodec is the typed fast path of one registered type; without
// unsafe there is none, and the registry's entries hold nil.
type fastCodec struct {
	encode func(dst []byte, v any) ([]byte, bool)
	size   func(v any) (int, bool)
	decode func(body []byte, c *streamCache) (any, bool)
}

// newFastCodec returns nil: T takes the general path.
func newFastCodec[T any](Limits, cbor.EncMode, cbor.DecMode) *fastCodec { return nil }

// boxes holds nothing: without a fast path no value is boxed.
type boxes struct{}

// streamCache.boxes stays, empty and unread, in this build.
var _ = streamCache{}.boxes
