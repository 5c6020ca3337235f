package wait

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestGroup: Group returns nil once the goroutines ended, and ctx's error
// when ctx ends first.
func TestGroup(t *testing.T) {
	var wg sync.WaitGroup
	if err := Group(context.Background(), &wg); err != nil {
		t.Fatalf("no goroutines: %v", err)
	}
	release := make(chan struct{})
	wg.Add(1)
	go func() { <-release; wg.Done() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := Group(ctx, &wg); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a goroutine still running: %v, want the deadline", err)
	}
	close(release)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := Group(ctx2, &wg); err != nil {
		t.Fatalf("after it ended: %v", err)
	}
}
