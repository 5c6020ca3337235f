package codec

import "fmt"

// Default decode limits. See Limits.
const (
	DefaultMaxDepth         = 32
	DefaultMaxArrayElements = 65536
	DefaultMaxMapPairs      = 16384
	DefaultMaxStringLen     = 1 << 20
)

// Ranges accepted for each field of Limits. The lower bounds of the container
// limits are those of the underlying CBOR library.
const (
	minMaxDepth     = 4
	maxMaxDepth     = 1024
	minMaxContainer = 16
	maxMaxContainer = 1 << 30
	maxMaxString    = MaxFrameLimit
)

// Limits bounds what the decoder accepts in a message body. Every limit is
// checked before memory is allocated for the item it applies to. Envelope
// fields have their own fixed limits (MaxNameLen, MaxPeerIDLen); the frame
// size is bounded by the FrameReader.
type Limits struct {
	// MaxDepth is the maximum nesting of arrays, maps and tags. The top-level
	// item counts as one level if it is a container. Range 4..1024.
	MaxDepth int
	// MaxArrayElements is the maximum number of elements in one array.
	// Range 16..2^30.
	MaxArrayElements int
	// MaxMapPairs is the maximum number of key-value pairs in one map.
	// Range 16..2^30.
	MaxMapPairs int
	// MaxStringLen is the maximum length in bytes of one byte string or
	// text string (for indefinite-length strings, the sum of the chunks).
	// Range 1..MaxFrameLimit.
	MaxStringLen int
}

// DefaultLimits returns the limits a Registry uses unless told otherwise:
// depth 32, 65536 array elements, 16384 map pairs, strings of 1 MiB.
func DefaultLimits() Limits {
	return Limits{
		MaxDepth:         DefaultMaxDepth,
		MaxArrayElements: DefaultMaxArrayElements,
		MaxMapPairs:      DefaultMaxMapPairs,
		MaxStringLen:     DefaultMaxStringLen,
	}
}

// validate reports whether every field is inside its accepted range.
func (l Limits) validate() error {
	check := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("%w: %s = %d, want %d..%d", ErrInvalidLimits, name, v, lo, hi)
		}
		return nil
	}
	if err := check("MaxDepth", l.MaxDepth, minMaxDepth, maxMaxDepth); err != nil {
		return err
	}
	if err := check("MaxArrayElements", l.MaxArrayElements, minMaxContainer, maxMaxContainer); err != nil {
		return err
	}
	if err := check("MaxMapPairs", l.MaxMapPairs, minMaxContainer, maxMaxContainer); err != nil {
		return err
	}
	return check("MaxStringLen", l.MaxStringLen, 1, maxMaxString)
}
