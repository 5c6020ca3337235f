package testutil

import "strings"

// RepeatedPhrase returns a run of three words that s holds twice, or "":
// what the CLI tests look for in an error line that says something twice
// ("failed to dial: failed to dial"). Words are split at spaces and at
// the punctuation errors are joined with.
func RepeatedPhrase(s string) string {
	w := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ':' || r == ';' || r == ',' })
	seen := map[string]bool{}
	for i := 0; i+3 <= len(w); i++ {
		p := strings.Join(w[i:i+3], " ")
		if seen[p] {
			return p
		}
		seen[p] = true
	}
	return ""
}
