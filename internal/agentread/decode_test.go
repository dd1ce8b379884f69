package agentread

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

type server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Timeout int               `json:"timeout"`
	Trust   *bool             `json:"trust"`
	Extra   json.RawMessage   `json:"extra"`
	Any     any               `json:"any"`
}

// TestUnmarshalExact: keys are taken exactly, as JavaScript reads them,
// where encoding/json folds case; what both read alike reads alike.
func TestUnmarshalExact(t *testing.T) {
	tests := []struct {
		text string
		want server
	}{
		{`{"command":"real","Command":"decoy"}`, server{Command: "real"}},
		{`{"Command":"decoy"}`, server{}},
		{`{"ſommand":"x","command":"y"}`, server{Command: "y"}},
		{`{"command":"a","command":"b"}`, server{Command: "b"}},
		{`{"env":{"PATH":"1","Path":"2"},"args":["x"],"timeout":5}`, server{Env: map[string]string{"PATH": "1", "Path": "2"}, Args: []string{"x"}, Timeout: 5}},
		{`{"extra":{"b":1,"B":2,"b":3},"any":{"x":[1,"y",null]}}`, server{Extra: json.RawMessage(`{"b":3,"B":2}`), Any: map[string]any{"x": []any{1.0, "y", nil}}}},
		{`{"env":{"constructor":"x","A":"1"},"constructor":{"command":"z"}}`, server{Env: map[string]string{"A": "1"}}},
	}
	for _, tt := range tests {
		var got server
		if err := Unmarshal([]byte(tt.text), &got, true); err != nil {
			t.Errorf("%s: %v", tt.text, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tt.text, got, tt.want)
		}
	}
	// Where the keys are exact, encoding/json reads the same.
	for _, text := range []string{`{"command":"c","args":["a","b"],"env":{"K":"v"},"timeout":30,"trust":true,"any":[1,{"a":null}]}`, `{"trust":null,"args":null}`} {
		var a, b server
		if err := Unmarshal([]byte(text), &a, false); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(text), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: agentread %+v, encoding/json %+v", text, a, b)
		}
	}
}

// TestUnmarshalTypeErrors: a value of the wrong type is encoding/json's
// error, with its path, and the rest is read.
func TestUnmarshalTypeErrors(t *testing.T) {
	for _, tt := range []struct{ text, field, kind string }{
		{`{"command":5,"args":["a"]}`, "command", "number"},
		{`{"timeout":1.5}`, "timeout", "number"},
		{`{"args":["a",5]}`, "args", "number"},
		{`{"env":{"K":true}}`, "env.K", "boolean"},
	} {
		var got server
		err := Unmarshal([]byte(tt.text), &got, false)
		te, ok := err.(*json.UnmarshalTypeError)
		if !ok || te.Field != tt.field || te.Value != tt.kind {
			t.Errorf("%s: %v (%s), want a type error at %s", tt.text, err, fmt.Sprintf("%#v", err), tt.field)
		}
	}
}
