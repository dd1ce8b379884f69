package envmap

import (
	"maps"
	"testing"
)

// TestOf: entries by name, the last of a variable set twice, none for an
// entry without "=", an empty value kept.
func TestOf(t *testing.T) {
	got := Of([]string{"HOME=/h", "A=1", "JUNK", "A=2", "EMPTY=", "EQ=a=b"})
	want := Map{"HOME": "/h", "A": "2", "EMPTY": "", "EQ": "a=b"}
	if !maps.Equal(got, want) {
		t.Errorf("Of = %v, want %v", got, want)
	}
	if got.Get("A") != "2" || got.Get("UNSET") != "" {
		t.Errorf("Get: %q %q", got.Get("A"), got.Get("UNSET"))
	}
}
