package main

import (
	"strings"
	"testing"
)

// TestCheck: a package whose windows files leave a name undefined, and
// whose int holds 1<<40, type-checks for darwin and 64-bit Linux, and
// fails for windows and for 32-bit Linux with the compiler's words and
// the file.
func TestCheck(t *testing.T) {
	for _, ok := range [][2]string{{"darwin", "amd64"}, {"linux", "arm64"}} {
		if n, errs := check(ok[0], ok[1], "testdata/mod", "./..."); len(errs) != 0 || n != 1 {
			t.Errorf("%s/%s: %d packages, errors %v; want 1 and none", ok[0], ok[1], n, errs)
		}
	}
	for _, c := range []struct{ goos, goarch, want string }{
		{"windows", "amd64", "mod.go:4:29: undefined: name"},
		{"linux", "386", "size.go:4:15: cannot use 1 << 40"},
		{"linux", "arm", "(overflows)"},
	} {
		_, errs := check(c.goos, c.goarch, "testdata/mod", "./...")
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%s/%s: errors %v; want %q", c.goos, c.goarch, errs, c.want)
		}
	}
}
