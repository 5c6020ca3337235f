package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
)

// Key files: created private, reused, refused when others may change them.

func TestKeyFileIsCreatedPrivateAndReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "identity.key")
	a := newTestNode(t, WithKeyFile(path))
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Fatalf("key file mode %o, want 600", mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b := newTestNode(t, WithKeyFile(path))
	if a.ID() != b.ID() {
		t.Fatalf("peer ID changed across restarts: %v then %v", a.ID(), b.ID())
	}
	if b.System().Peer() != b.ID().String() {
		t.Fatal("actor system's peer is not the node's ID")
	}
}

func TestCorruptKeyFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	if err := os.WriteFile(path, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), quiet(), local(), WithKeyFile(path)); err == nil {
		t.Fatal("corrupt key accepted")
	}
}

// TestKeyFileSafety: a key file others may read is refused; processes (here
// goroutines) that create the same key file at once all get the one key.
func TestKeyFileSafety(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.key")
	k, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKey(path); !errors.Is(err, ErrInsecureKeyFile) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key file of mode 644: %v, want a refusal", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := LoadOrCreateKey(path); err != nil || !again.Equals(k) {
		t.Fatalf("the key read back: %v", err)
	}

	path = filepath.Join(t.TempDir(), "race", "identity.key")
	keys := make([]crypto.PrivKey, 8)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = LoadOrCreateKey(path) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || !keys[i].Equals(keys[0]) {
			t.Fatalf("creator %d: %v (or another key than creator 0's)", i, errs[i])
		}
	}
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 {
		t.Fatalf("%d files beside the key (temporary files left?): %v", len(entries), err)
	}
}
