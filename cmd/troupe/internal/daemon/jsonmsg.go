package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/fxamacker/cbor/v2"

	"github.com/troupe-mesh/troupe/cmd/troupe/internal/cli"
	"github.com/troupe-mesh/troupe/cmd/troupe/internal/control"
	"github.com/troupe-mesh/troupe/codec"
)

// JSONType is the type name of a message given as JSON on the command line
// without --type: receivers see it as a codec.Raw of this type.
const JSONType = "troupe.JSON"

// JSONToCBOR converts one JSON value to CBOR: integers stay integers,
// other numbers become floats, objects become maps with text keys.
func JSONToCBOR(s string) ([]byte, error) {
	if len(s) > control.MaxJSONMessage {
		return nil, fmt.Errorf("message is %d bytes, more than %d", len(s), control.MaxJSONMessage)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("message is not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("message is more than one JSON value")
	}
	v, err := fromJSONNumbers(v)
	if err != nil {
		return nil, err
	}
	return cbor.Marshal(v)
}

func fromJSONNumbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i, nil
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s is out of range", v)
		}
		return f, nil
	case []any:
		for i := range v {
			x, err := fromJSONNumbers(v[i])
			if err != nil {
				return nil, err
			}
			v[i] = x
		}
	case map[string]any:
		for k := range v {
			x, err := fromJSONNumbers(v[k])
			if err != nil {
				return nil, err
			}
			v[k] = x
		}
	}
	return v, nil
}

// cborDec decodes message bodies for display (the codec has already
// checked them against its limits).
var cborDec, _ = cbor.DecOptions{MaxNestedLevels: 32}.DecMode()

// toJSON renders a message (a Go value of a registered type or a
// codec.Raw) as JSON for the command line.
func toJSON(msg any) (json.RawMessage, error) {
	if raw, ok := msg.(codec.Raw); ok {
		var v any
		if err := cborDec.Unmarshal(raw.Body, &v); err != nil {
			return nil, fmt.Errorf("reply of type %q: %w", raw.Type, err)
		}
		msg = jsonable(v)
	}
	b, err := cli.MarshalJSON(msg)
	if err != nil {
		b, err = cli.MarshalJSON(fmt.Sprintf("%+v", msg))
	}
	return b, err
}

// jsonable turns what CBOR decoding yields into values encoding/json takes:
// map keys become strings.
func jsonable(v any) any {
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprint(k)
			}
			m[ks] = jsonable(x)
		}
		return m
	case []any:
		for i := range v {
			v[i] = jsonable(v[i])
		}
	}
	return v
}
