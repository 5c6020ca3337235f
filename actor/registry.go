package actor

import (
	"hash/maphash"
	"sync"
)

const registryShards = 256

// registry maps names to live actors. It is sharded so that lookups from
// different loops rarely touch the same lock, and typed so that a name costs
// one map slot, not a boxed key.
type registry struct {
	seed   maphash.Seed
	shards [registryShards]registryShard
	gen    genTable // generated names (gentable.go)
}

type registryShard struct {
	mu sync.RWMutex // guards m
	m  map[string]*Context
	_  [64 - 32]byte // keep shards on separate cache lines
}

func newRegistry() *registry {
	r := &registry{seed: maphash.MakeSeed()}
	for i := range r.shards {
		r.shards[i].m = make(map[string]*Context)
	}
	return r
}

func (r *registry) shard(name string) *registryShard {
	return &r.shards[maphash.String(r.seed, name)%registryShards]
}

func (r *registry) load(name string) *Context {
	if slot, ok := genSlot(name); ok {
		if c := r.gen.load(slot); c != nil && c.name() == name {
			return c
		}
		return nil
	}
	s := r.shard(name)
	s.mu.RLock()
	c := s.m[name]
	s.mu.RUnlock()
	return c
}

// add registers c under its name unless the name is taken. A generated
// name goes to the slot it names, which take reserved.
func (r *registry) add(c *Context) bool {
	if slot, ok := genSlot(c.name()); ok {
		r.gen.set(slot, c)
		return true
	}
	s := r.shard(c.name())
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.m[c.name()]; taken {
		return false
	}
	s.m[c.name()] = c
	return true
}

// remove unregisters c if its name still maps to it.
func (r *registry) remove(c *Context) {
	if slot, ok := genSlot(c.name()); ok {
		r.gen.release(slot, c)
		return
	}
	s := r.shard(c.name())
	s.mu.Lock()
	if s.m[c.name()] == c {
		delete(s.m, c.name())
	}
	s.mu.Unlock()
}

// all returns the registered actors.
func (r *registry) all() []*Context {
	out := r.gen.all(nil)
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.RLock()
		for _, c := range s.m {
			out = append(out, c)
		}
		s.mu.RUnlock()
	}
	return out
}
