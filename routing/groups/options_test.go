package groups

import (
	"errors"
	"testing"

	"github.com/troupe-mesh/troupe/actor/transport"
	"github.com/troupe-mesh/troupe/codec"
	"github.com/troupe-mesh/troupe/internal/testutil/testhost"
)

// New refuses a missing host, registry, mesh name or port, and a nil
// option, with ErrInvalidConfig, before it starts anything.
func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	h := testhost.NewHost(t)
	reg, err := codec.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	p := new(transport.Port) // never used: New fails first
	for name, c := range map[string]func() (*Groups, error){
		"no host":     func() (*Groups, error) { return New(nil, reg, "m", p) },
		"no registry": func() (*Groups, error) { return New(h, nil, "m", p) },
		"no mesh":     func() (*Groups, error) { return New(h, reg, "", p) },
		"no port":     func() (*Groups, error) { return New(h, reg, "m", nil) },
		"nil option":  func() (*Groups, error) { return New(h, reg, "m", p, WithLogger(nil), nil) },
	} {
		if g, err := c(); !errors.Is(err, ErrInvalidConfig) || g != nil {
			t.Errorf("%s: %v, %v; want ErrInvalidConfig and no Groups", name, g, err)
		}
	}
}
