package cli

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLine is the longest line, in bytes, a chat line or a remote text
// keeps: Clean cuts there.
const MaxLine = 16 << 10

// Clean makes a text from another peer safe to print on one line: control
// characters (line breaks, terminal escape sequences, C1 codes) and bidi
// controls (which can reorder what a line shows) become spaces, and
// the text is cut at MaxLine bytes.
func Clean(text string) string {
	if len(text) > MaxLine {
		text = strings.ToValidUTF8(text[:MaxLine], "") + " …"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, text)
}
