package actor

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest actor name, in bytes.
const MaxNameLen = 255

// Ref addresses an actor: the ID of the peer that hosts it plus its name on
// that peer. It is a small comparable value, usable as a map key; two Refs
// are equal when they name the same actor. The zero Ref addresses nothing.
type Ref struct {
	peer string
	name string
}

// NewRef returns the Ref of the actor called name on peer. It does not check
// that such an actor exists. It returns ErrInvalidRef when peer is empty or
// holds '/', and ErrInvalidName for a bad name (generated names, which start
// with '$', are accepted here).
func NewRef(peer, name string) (Ref, error) {
	if peer == "" || strings.ContainsRune(peer, '/') || !utf8.ValidString(peer) {
		return Ref{}, fmt.Errorf("%w: peer %q", ErrInvalidRef, peer)
	}
	if err := checkName(name, true); err != nil {
		return Ref{}, err
	}
	return Ref{peer: peer, name: name}, nil
}

// ParseRef parses "<peer>/<name>" or "/p2p/<peer>/actor/<name>".
func ParseRef(s string) (Ref, error) {
	if rest, ok := strings.CutPrefix(s, "/p2p/"); ok {
		peer, name, ok := strings.Cut(rest, "/actor/")
		if !ok {
			return Ref{}, fmt.Errorf("%w: %q lacks /actor/<name>", ErrInvalidRef, s)
		}
		return NewRef(peer, name)
	}
	peer, name, ok := strings.Cut(s, "/")
	if !ok {
		return Ref{}, fmt.Errorf("%w: %q is not <peer>/<name>", ErrInvalidRef, s)
	}
	return NewRef(peer, name)
}

// Peer returns the ID of the peer that hosts the actor.
func (r Ref) Peer() string { return r.peer }

// Name returns the actor's name on its peer.
func (r Ref) Name() string { return r.name }

// IsZero reports whether r is the zero Ref.
func (r Ref) IsZero() bool { return r == Ref{} }

// String returns "<peer>/<name>", or "<none>" for the zero Ref.
func (r Ref) String() string {
	if r.IsZero() {
		return "<none>"
	}
	return r.peer + "/" + r.name
}

// MarshalText encodes r as "<peer>/<name>" (empty for the zero Ref).
func (r Ref) MarshalText() ([]byte, error) {
	if r.IsZero() {
		return nil, nil
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses what MarshalText produced.
func (r *Ref) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = Ref{}
		return nil
	}
	v, err := ParseRef(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// checkName validates an actor name; generated ('$'-prefixed) names are
// allowed only when generated is true.
func checkName(name string, generated bool) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidName)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidName, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %q is not UTF-8", ErrInvalidName, name)
	case name[0] == '$' && !generated:
		return fmt.Errorf("%w: %q: names starting with '$' are reserved for generated names", ErrInvalidName, name)
	}
	for _, r := range name {
		if r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: %q holds %q", ErrInvalidName, name, r)
		}
	}
	return nil
}
