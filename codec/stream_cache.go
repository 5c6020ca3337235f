package codec

// slabSize is the size of the blocks a streamCache carves small byte
// slices from.
const slabSize = 4 << 10

// slabMaxObject is the largest byte slice carved from a block; larger ones
// get their own allocation.
const slabMaxObject = 512

// streamCache holds what a FrameReader reuses from one envelope to the
// next: recently seen names, and a block of memory from which the peer IDs
// and bodies of small envelopes are carved. It is not safe for concurrent
// use.
type streamCache struct {
	names nameCache
	slab  []byte // the current block
	used  int    // bytes of slab handed out (an offset, not a new slice: no pointer store per message)
	boxes boxes  // decoded values of plain structs

	lastTab   *table // the registrations lastEntry was found in
	lastEntry *entry // the type of the previous message decoded
}

// bytes returns a new slice of length and capacity n. Small slices are cut
// from a shared block, so that a steady stream of small messages costs one
// allocation per block instead of one per message. The slices never
// overlap and their capacity is clipped, so appending to one cannot write
// into another; but one slice kept alive keeps its whole block alive.
func (c *streamCache) bytes(n int) []byte {
	if n > slabMaxObject {
		return make([]byte, n)
	}
	if len(c.slab)-c.used < n {
		c.slab, c.used = make([]byte, slabSize), 0
	}
	b := c.slab[c.used : c.used+n : c.used+n]
	c.used += n
	return b
}

// nameCacheSlots is the number of entries in a nameCache.
const nameCacheSlots = 64

// nameCacheMaxLen is the longest name a nameCache keeps.
const nameCacheMaxLen = 64

// nameCache remembers recently decoded envelope names (To, FromName, Type)
// so that a stream carrying the same names over and over does not allocate
// them for every frame. It is a small direct-mapped table: fixed memory, no
// eviction policy beyond overwriting a slot, and a miss costs only what
// decoding without a cache costs. A FrameReader owns one; it is not safe
// for concurrent use.
type nameCache struct {
	slots            [nameCacheSlots]string
	lastTo, lastName string // the names of the previous envelope, which
	lastType         string // the next one most often repeats
	lastEncoding     []byte // their encoding, from To's head to Type's end
}

// slot returns the table index for b, which is not empty.
func (c *nameCache) slot(b []byte) *string {
	n := len(b)
	h := uint(n)*0x9e37 ^ uint(b[0])<<3 ^ uint(b[n-1])<<7 ^ uint(b[n/2])
	h ^= h >> 7
	return &c.slots[h%nameCacheSlots]
}

// find returns the cached string equal to b.
func (c *nameCache) find(b []byte) (string, bool) {
	if len(b) == 0 {
		return "", true
	}
	if len(b) > nameCacheMaxLen {
		return "", false
	}
	if s := *c.slot(b); s == string(b) {
		return s, true
	}
	return "", false
}

// store remembers s.
func (c *nameCache) store(s string) {
	if s != "" && len(s) <= nameCacheMaxLen {
		*c.slot([]byte(s)) = s
	}
}

// lookup returns the three names, which enc encodes, as strings: from the
// cache if all three are there, otherwise with one allocation, remembering
// the results.
func (c *nameCache) lookup(enc, to, name, typ []byte) (string, string, string) {
	if string(to) == c.lastTo && string(name) == c.lastName && string(typ) == c.lastType {
		c.lastEncoding = append(c.lastEncoding[:0], enc...)
		return c.lastTo, c.lastName, c.lastType
	}
	s1, s2, s3 := c.lookupSlots(to, name, typ)
	if len(s1) <= nameCacheMaxLen && len(s2) <= nameCacheMaxLen && len(s3) <= nameCacheMaxLen {
		c.lastTo, c.lastName, c.lastType = s1, s2, s3
		c.lastEncoding = append(c.lastEncoding[:0], enc...)
	}
	return s1, s2, s3
}

// sameEncoding reports whether enc, the encoding of an envelope's names
// from To's head to the end of Type, is that of the names of the previous
// lookup, which were valid UTF-8.
func (c *nameCache) sameEncoding(enc []byte) bool {
	return len(c.lastEncoding) > 0 && string(enc) == string(c.lastEncoding)
}

// lookupSlots is lookup without the previous envelope's names.
func (c *nameCache) lookupSlots(to, name, typ []byte) (string, string, string) {
	s1, ok1 := c.find(to)
	s2, ok2 := c.find(name)
	s3, ok3 := c.find(typ)
	if ok1 && ok2 && ok3 {
		return s1, s2, s3
	}
	s1, s2, s3 = joinStrings(to, name, typ)
	c.store(s1)
	c.store(s2)
	c.store(s3)
	return s1, s2, s3
}
