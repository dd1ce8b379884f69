package term

import (
	"bytes"
	"testing"
)

func TestBoldWriter(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"plain", []string{"no marks here"}, "no marks here"},
		{"bold", []string{"a **b** c"}, "a \x1b[1mb\x1b[22m c"},
		{"marker split across writes", []string{"a *", "*b*", "* c"}, "a \x1b[1mb\x1b[22m c"},
		{"single stars stay", []string{"2 * 3 = 6, *x*"}, "2 * 3 = 6, *x*"},
		{"left open", []string{"**open"}, "\x1b[1mopen\x1b[22m"},
		{"trailing star", []string{"end*"}, "end*"},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		w := NewBoldWriter(&out)
		for _, c := range tc.chunks {
			w.Write([]byte(c))
		}
		w.Close()
		if out.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, out.String(), tc.want)
		}
	}
}
