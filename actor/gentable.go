package actor

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// Generated names. An actor spawned without a name gets "$<seq>.<slot>",
// both numbers in base 36: seq is unique on this system and starts at a
// random point (see genRef), slot indexes the genTable, where looking the
// actor up costs no hashing and registering it no map growth. A slot is
// used again once its actor stopped; the seq part keeps a Ref to the
// former actor from reaching the new one (a lookup compares whole names).

// genChunkBits sizes the table's chunks: 4,096 slots (32 KiB) each.
const genChunkBits = 12

type genChunk [1 << genChunkBits]atomic.Pointer[Context]

// genTable holds the actors with generated names by slot.
type genTable struct {
	dir atomic.Pointer[[]*genChunk] // replaced (copied) when it grows, under mu

	mu   sync.Mutex // guards free and next
	free []uint32   // slots given back, reused last in first out
	next uint32     // slots below it have been handed out
}

// take reserves a slot for an actor about to be spawned.
func (t *genTable) take() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.free); n > 0 {
		slot := t.free[n-1]
		t.free = t.free[:n-1]
		return slot
	}
	slot := t.next
	t.next++
	dir := t.dir.Load()
	if dir == nil || int(slot>>genChunkBits) >= len(*dir) {
		var grown []*genChunk
		if dir != nil {
			grown = append(grown, *dir...)
		}
		grown = append(grown, new(genChunk))
		t.dir.Store(&grown)
	}
	return slot
}

// chunk returns the chunk that holds slot, or nil.
func (t *genTable) chunk(slot uint32) *genChunk {
	dir := t.dir.Load()
	if dir == nil || int(slot>>genChunkBits) >= len(*dir) {
		return nil
	}
	return (*dir)[slot>>genChunkBits]
}

// set puts c in slot, which take returned.
func (t *genTable) set(slot uint32, c *Context) {
	t.chunk(slot)[slot&(1<<genChunkBits-1)].Store(c)
}

// load returns the actor in slot, or nil.
func (t *genTable) load(slot uint32) *Context {
	if ch := t.chunk(slot); ch != nil {
		return ch[slot&(1<<genChunkBits-1)].Load()
	}
	return nil
}

// release gives slot back, emptying it if it still holds c.
func (t *genTable) release(slot uint32, c *Context) {
	if ch := t.chunk(slot); ch == nil || !ch[slot&(1<<genChunkBits-1)].CompareAndSwap(c, nil) {
		return
	}
	t.mu.Lock()
	t.free = append(t.free, slot)
	t.mu.Unlock()
}

// all appends the actors in the table to out.
func (t *genTable) all(out []*Context) []*Context {
	dir := t.dir.Load()
	if dir == nil {
		return out
	}
	for _, ch := range *dir {
		for i := range ch {
			if c := ch[i].Load(); c != nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// genSlot returns the slot of a generated name ("$<seq>.<slot>"), and
// false for any other name.
func genSlot(name string) (uint32, bool) {
	if len(name) < 4 || name[0] != '$' {
		return 0, false
	}
	dot := -1
	for i := len(name) - 1; i > 1; i-- {
		if name[i] == '.' {
			dot = i
			break
		}
	}
	if dot < 0 || !base36(name[1:dot]) || !base36(name[dot+1:]) {
		return 0, false
	}
	slot, err := strconv.ParseUint(name[dot+1:], 36, 32)
	if err != nil {
		return 0, false
	}
	return uint32(slot), true
}

// base36 reports whether s is a number as strconv.FormatUint(_, 36)
// writes it: lower-case digits, no leading zero (so that one slot has
// one spelling).
func base36(s string) bool {
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
