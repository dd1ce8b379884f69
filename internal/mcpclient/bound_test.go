package mcpclient

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestBoundedReader: a line (one message) over the bound fails with
// ErrMessageTooLarge, however it is read; lines within it pass whatever
// their total.
func TestBoundedReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		tooLarge bool
	}{
		{"one line within", "12345\n", 5, false},
		{"many lines within, more in all", strings.Repeat("12345\n", 100), 5, false},
		{"the last line without its newline", "12345\n123", 5, false},
		{"one line over", "123456\n", 5, true},
		{"a line over after good ones", "123\n45\n123456789", 5, true},
		{"a line that never ends", strings.Repeat("x", 1000), 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, half := range []bool{false, true} {
				var r io.Reader = strings.NewReader(tc.in)
				if half {
					r = iotest.OneByteReader(r)
				}
				b := &boundedReader{r: r, max: tc.max}
				got, err := io.ReadAll(b)
				if tc.tooLarge != errors.Is(err, ErrMessageTooLarge) || tc.tooLarge != b.over.Load() {
					t.Fatalf("one byte at a time %v: err %v, over %v", half, err, b.over.Load())
				}
				if !tc.tooLarge && string(got) != tc.in {
					t.Fatalf("read %q, want %q", got, tc.in)
				}
				if _, err := b.Read(make([]byte, 8)); tc.tooLarge && !errors.Is(err, ErrMessageTooLarge) {
					t.Fatalf("a read after the bound: %v", err)
				}
			}
		})
	}
}
