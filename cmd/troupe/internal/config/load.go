package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// Load reads path over the defaults. A missing file yields the
// defaults and exists=false.
func Load(path string) (cfg Config, exists bool, err error) {
	cfg = Default()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, false, nil
	}
	if err != nil {
		return cfg, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, true, fmt.Errorf("%w: %s: %s", ErrInvalid, path, jsonProblem(err))
	}
	if err := exactKeys(b, reflect.TypeFor[Config](), ""); err != nil {
		return cfg, true, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	if dec.More() {
		return cfg, true, fmt.Errorf("%w: %s: more than one JSON value", ErrInvalid, path)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, true, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, true, nil
}

// exactKeys reports a key of the JSON object b that is not exactly the
// json name of a field of t, looking into fields that are structs.
// (encoding/json matches names regardless of case: "Mesh" would set
// mesh, and a config that only works by that luck should be fixed.)
func exactKeys(b []byte, t reflect.Type, prefix string) error {
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil {
		return nil // not an object: the decoder said so
	}
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = t.Field(i).Type
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		ft, ok := fields[k]
		if !ok {
			return fmt.Errorf("unknown field %q", prefix+k)
		}
		if ft.Kind() == reflect.Struct {
			if err := exactKeys(obj[k], ft, prefix+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonProblem turns a decoding error into a message naming the field.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("field %q: %s is not a valid %s", te.Field, te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	case errors.Is(err, io.EOF):
		return "empty file"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "invalid JSON: the file ends in the middle of a value"
	}
	return err.Error()
}

// Write writes cfg to path (mode 0600) without replacing an existing
// file half-way: it writes a temporary file and renames it.
func Write(path string, cfg Config) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
