package actor

import (
	"testing"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

type generic[T any] struct{ V T }

// TestTypeName pins the type names dead-letter records show: package.Type
// without package paths, type arguments too, and spi's generic types by
// their public names.
func TestTypeName(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{nil, "nil"},
		{"text", "string"},
		{Ref{}, "actor.Ref"},
		{&Ref{}, "*actor.Ref"},
		{generic[Ref]{}, "actor.generic[actor.Ref]"},
		{generic[map[string]Ref]{}, "actor.generic[map[string]actor.Ref]"},
		{spi.Undeliverable[Ref]{}, "transport.Undeliverable"},
		{joinedMsg{}, "group.Joined"},
		{leftMsg{}, "group.Left"},
	} {
		if got := typeName(c.v); got != c.want {
			t.Errorf("typeName(%T) = %q, want %q", c.v, got, c.want)
		}
	}
}
