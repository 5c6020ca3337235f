package actor

import (
	"reflect"
	"testing"

	"github.com/troupe-mesh/troupe/actor/internal/spi"
)

// TestSPIHooksAllSet: every function of the hooks that packages
// actor/transport and actor/group call is set by this package's init, so
// that a hook added to spi.Hooks or spi.GroupHooks and forgotten in
// spi.go fails here rather than as a nil call in a transport.
func TestSPIHooksAllSet(t *testing.T) {
	for name, h := range map[string]any{"spi.Actor": spi.Actor, "spi.Group": spi.Group} {
		v := reflect.ValueOf(h)
		if h == nil || v.Kind() != reflect.Pointer || v.IsNil() {
			t.Fatalf("%s is %T, want a pointer to the hooks", name, h)
		}
		v = v.Elem()
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Func && f.IsNil() {
				t.Errorf("%s.%s is nil", name, v.Type().Field(i).Name)
			}
		}
	}
	if _, ok := spi.Actor.(*spi.Hooks[System, Ref, Option, SpawnOption]); !ok {
		t.Errorf("spi.Actor is %T, not the type package transport asserts", spi.Actor)
	}
	if _, ok := spi.Group.(*spi.GroupHooks[Context, System, Ref]); !ok {
		t.Errorf("spi.Group is %T, not the type package group asserts", spi.Group)
	}
}
