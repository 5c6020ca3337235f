package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// 'troupe config set KEY VALUE' changes one field of config.json: KEY is
// its JSON path (mesh, mdns, limits.conns, dead_letters.keep, ...),
// VALUE as JSON for numbers, booleans and lists (a list may also be
// given as comma-separated words), as it is for strings. The result is
// checked as a config.json that the daemon reads is, and written only
// when valid.

// configField returns the type of the field of Config at the JSON path
// key, or an error naming the known keys at the level that did not match.
func configField(key string) (reflect.Type, error) {
	t := reflect.TypeFor[Config]()
	parts := strings.Split(key, ".")
	for i, p := range parts {
		var names []string
		var found reflect.Type
		for j := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(j).Tag.Get("json"), ",")
			names = append(names, name)
			if name == p {
				found = t.Field(j).Type
			}
		}
		if found == nil {
			return nil, fmt.Errorf("%w: no key %q in config.json (at this level: %s)", ErrUsage, key, strings.Join(names, ", "))
		}
		if i < len(parts)-1 && found.Kind() != reflect.Struct {
			return nil, fmt.Errorf("%w: %q is not a section of config.json", ErrUsage, strings.Join(parts[:i+1], "."))
		}
		if i == len(parts)-1 && found.Kind() == reflect.Struct {
			return nil, fmt.Errorf("%w: %q is a section; set one of its keys (%s.KEY)", ErrUsage, key, key)
		}
		t = found
	}
	return t, nil
}

// configValue turns VALUE into the JSON of a field of type t.
func configValue(t reflect.Type, key, value string) (json.RawMessage, error) {
	switch t.Kind() {
	case reflect.String:
		b, _ := json.Marshal(value)
		return b, nil
	case reflect.Slice:
		if strings.HasPrefix(strings.TrimSpace(value), "[") {
			if !json.Valid([]byte(value)) {
				return nil, fmt.Errorf("%w: %s takes a JSON list or comma-separated words, not %q", ErrInvalid, key, value)
			}
			return json.RawMessage(value), nil
		}
		items := []string{}
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		b, _ := json.Marshal(items)
		return b, nil
	}
	if !json.Valid([]byte(value)) {
		return nil, fmt.Errorf("%w: %s takes a %s, not %q", ErrInvalid, key, t.Kind(), value)
	}
	return json.RawMessage(value), nil
}

// Set returns cfg with key set to value, validated.
func Set(cfg Config, key, value string) (Config, error) {
	t, err := configField(key)
	if err != nil {
		return cfg, err
	}
	v, err := configValue(t, key, value)
	if err != nil {
		return cfg, err
	}
	b, _ := json.Marshal(cfg)
	var tree map[string]any
	_ = json.Unmarshal(b, &tree)
	parts := strings.Split(key, ".")
	node := tree
	for _, p := range parts[:len(parts)-1] {
		node = node[p].(map[string]any)
	}
	node[parts[len(parts)-1]] = v
	b, _ = json.Marshal(tree)
	out := Default()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return cfg, fmt.Errorf("%w: %s", ErrInvalid, jsonProblem(err))
	}
	if err := out.Validate(); err != nil {
		return cfg, err
	}
	return out, nil
}
