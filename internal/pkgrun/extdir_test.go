package pkgrun

import "testing"

// TestExtDir: the folder of an extension's trees is one plain component
// under the root, whatever name is asked.
func TestExtDir(t *testing.T) {
	if d, err := extDir("/r", "context7"); err != nil || d != "/r/context7" {
		t.Errorf("%q %v", d, err)
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", ".staging-x", `a\b`} {
		if _, err := extDir("/r", bad); err == nil {
			t.Errorf("%q is taken for an extension's name", bad)
		}
	}
}
