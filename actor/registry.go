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
	s := r.shard(name)
	s.mu.RLock()
	c := s.m[name]
	s.mu.RUnlock()
	return c
}

// add registers c under its name unless the name is taken.
func (r *registry) add(c *Context) bool {
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
	s := r.shard(c.name())
	s.mu.Lock()
	if s.m[c.name()] == c {
		delete(s.m, c.name())
	}
	s.mu.Unlock()
}

// all returns the registered actors.
func (r *registry) all() []*Context {
	var out []*Context
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
