package nvimrpc

import (
	"bufio"
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestRoundTrip encodes each kind of value the client sends and decodes it
// back (integers come back as int64).
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"true", true, true},
		{"small int", 7, int64(7)},
		{"negative int", int64(-5), int64(-5)},
		{"large int", int64(1) << 40, int64(1) << 40},
		{"short string", "nvim_input", "nvim_input"},
		{"long string", strings.Repeat("é", 40000), strings.Repeat("é", 40000)},
		{"array", []any{"a", 1, []any{}}, []any{"a", int64(1), []any{}}},
		{"long array", make([]any, 20), make([]any, 20)},
		{"map", map[string]any{"k": "v", "n": 2}, map[string]any{"k": "v", "n": int64(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeMsgpack(bufio.NewReader(bytes.NewReader(encodeMsgpack(nil, tt.in))))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("round trip of %v = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}
