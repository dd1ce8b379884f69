package netproxy

import (
	"bytes"
	"slices"
	"testing"
)

// TestResolverAnswer: every well-formed query gets its question back
// with "no such name"; a name is recorded only for address lookups;
// garbage gets no answer.
func TestResolverAnswer(t *testing.T) {
	// A query for A example.test, id 0x1234, recursion desired.
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1}
	ans, name, ok := nameError(q)
	if !ok || name != "example.test" {
		t.Fatalf("%v %q", ok, name)
	}
	if ans[0] != 0x12 || ans[1] != 0x34 || ans[2]&0x80 == 0 || ans[3]&0x0f != 3 || !bytes.Equal(ans[12:], q[12:]) {
		t.Errorf("answer % x", ans)
	}
	mx := slices.Clone(q)
	mx[len(mx)-3] = 15 // MX
	if _, name, ok := nameError(mx); !ok || name != "" {
		t.Errorf("MX: %v %q", ok, name)
	}
	for _, bad := range [][]byte{nil, q[:11], q[:20], append(slices.Clone(q[:2]), append([]byte{0x81, 0x80}, q[4:]...)...)} {
		if _, _, ok := nameError(bad); ok {
			t.Errorf("answered % x", bad)
		}
	}
}
