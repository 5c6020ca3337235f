// Package wait waits for goroutines within a context, for the Close
// methods of Troupe's long-lived types.
package wait

import (
	"context"
	"sync"
)

// Group waits for wg until ctx ends. When ctx ends first it returns ctx's
// error; the goroutines, already told to stop, end on their own.
func Group(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
