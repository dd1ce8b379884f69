//go:build !windows

package runtimedir

import (
	"path/filepath"
	"testing"
)

// TestJoin: join is filepath.Join wherever paths are separated by '/'.
func TestJoin(t *testing.T) {
	for _, dir := range []string{"", "/", "//", "/run/user/0", "/run/user/0/", "/run//user/./0/", "/a/../b", "/../x", "/a/b/../../..",
		"tmp", "tmp/", "./tmp", "../tmp", "a/../..", "a/b/../../../c", ".", "..", "a/./b/.//c/.."} {
		for _, name := range []string{"gemkit", "gemkit-0", "", ".", ".."} {
			if got, want := join(dir, name), filepath.Join(dir, name); got != want {
				t.Errorf("join(%q, %q) = %q, filepath.Join's %q", dir, name, got, want)
			}
		}
	}
}
