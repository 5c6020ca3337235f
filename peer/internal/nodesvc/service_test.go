package nodesvc

import (
	"errors"
	"fmt"
	"testing"
)

// TestSpawnErrorCodes: a spawn's error that wraps a sentinel travels as
// its code and matches that sentinel with errors.Is on the asking side;
// one that wraps none comes back as text only; an unknown code (a newer
// peer's) is text too.
func TestSpawnErrorCodes(t *testing.T) {
	for code, s := range spawnErrors[1:] {
		rep := spawnFailed(fmt.Errorf("context: %w", s))
		if int(rep.Code) != code+1 {
			t.Fatalf("%v: code %d, want %d", s, rep.Code, code+1)
		}
		if err := rep.err(); !errors.Is(err, s) {
			t.Fatalf("%v: the reply's error %v does not match it", s, err)
		}
	}
	plain := spawnFailed(errors.New("a factory's own error"))
	if plain.Code != 0 || plain.err().Error() != "a factory's own error" {
		t.Fatalf("a plain error's reply %+v, error %v", plain, plain.err())
	}
	newer := spawnReply{Err: "from a newer peer", Code: uint8(len(spawnErrors))}
	for _, s := range spawnErrors[1:] {
		if errors.Is(newer.err(), s) {
			t.Fatalf("an unknown code matches %v", s)
		}
	}
}
