package discovery

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckMesh(t *testing.T) {
	for _, ok := range []string{"default", "a", "team-7", strings.Repeat("x", 32)} {
		if err := CheckMesh(ok); err != nil {
			t.Fatalf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "Upper", "has space", "dot.ted", "under_score", strings.Repeat("x", 33), "ünï"} {
		if err := CheckMesh(bad); !errors.Is(err, ErrBadMesh) {
			t.Fatalf("%q: %v, want ErrBadMesh", bad, err)
		}
	}
	if got := ServiceName("lab"); got != "_troupe-lab._udp" {
		t.Fatalf("service name %q", got)
	}
}

// mDNS itself is tested in integration/netns_test.go, inside network
// namespaces: here it would multicast on the machine's real interfaces.
