package daemon

import (
	"bytes"
	"os"
	"testing"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
)

// TestIDSaysWhetherMemoryIsReleased: 'troupe id --json' carries
// memory_release, "on" by default and "off: GOGC set" when the process
// set GOGC (as the GC heap floor, memrelease leaves memory to the
// runtime then).
func TestIDSaysWhetherMemoryIsReleased(t *testing.T) {
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} { // unset, restored after
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, c := range []struct {
		gogc, want string
	}{{"", "on"}, {"200", "off: GOGC set"}} {
		if c.gogc != "" {
			t.Setenv("GOGC", c.gogc)
		}
		d, _, stop := startStoppableDaemon(t, &cli.LockedWriter{W: new(bytes.Buffer)})
		if got := d.id().MemoryRelease; got != c.want {
			t.Errorf("GOGC=%q: memory_release %q, want %q", c.gogc, got, c.want)
		}
		stop()
	}
}
