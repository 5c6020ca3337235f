package cli

import (
	"bytes"
	"encoding/json"
)

// MarshalJSON encodes v without escaping <, > and & (the output is not
// HTML), so sizes stay close to the message's.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// CompactJSON formats b on one line for human output.
func CompactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}
