package spi

import (
	"context"
	"sync"
	"sync/atomic"
)

// Credit counts bytes charged and not given back yet (transport.Credit
// wraps it and documents it). Charge and Release are actor's: the
// transport reads Held and waits with WaitLow.
type Credit struct {
	held    atomic.Int64
	low     int64
	waiters atomic.Int32
	mu      sync.Mutex    // guards ch
	ch      chan struct{} // closed when held falls to low; nil when nobody waits
}

// Init sets the low mark; call it before any other method.
func (c *Credit) Init(low int64) { c.low = low }

// Held returns the bytes charged and not given back yet.
func (c *Credit) Held() int64 { return c.held.Load() }

// WaitLow waits until at most the low mark is held, or ctx ends.
func (c *Credit) WaitLow(ctx context.Context) error {
	c.waiters.Add(1)
	defer c.waiters.Add(-1)
	c.mu.Lock()
	if c.held.Load() <= c.low {
		c.mu.Unlock()
		return nil
	}
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	ch := c.ch
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Charge adds n bytes.
func (c *Credit) Charge(n int64) { c.held.Add(n) }

// Release gives back n bytes and wakes the waiters when that brought the
// held bytes to the low mark.
func (c *Credit) Release(n int64) {
	if c.held.Add(-n) > c.low || c.waiters.Load() == 0 {
		return
	}
	c.mu.Lock()
	if c.ch != nil && c.held.Load() <= c.low {
		close(c.ch)
		c.ch = nil
	}
	c.mu.Unlock()
}
