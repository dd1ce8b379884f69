package main

import (
	"strings"
	"testing"
)

// TestCheck: a package whose windows files leave a name undefined, and
// whose int holds 1<<40, type-checks for darwin and 64-bit Linux, and
// fails for windows and for 32-bit Linux with the compiler's words and
// the file; its test, whose uintptr holds a 64-bit address, fails for
// 32-bit Linux only when tests are checked.
func TestCheck(t *testing.T) {
	for _, ok := range [][2]string{{"darwin", "amd64"}, {"linux", "arm64"}} {
		if n, errs := check(ok[0], ok[1], false, "testdata/mod", "./..."); len(errs) != 0 || n != 1 {
			t.Errorf("%s/%s: %d packages, errors %v; want 1 and none", ok[0], ok[1], n, errs)
		}
	}
	for _, c := range []struct{ goos, goarch, want string }{
		{"windows", "amd64", "mod.go:4:29: undefined: name"},
		{"linux", "386", "size.go:4:15: cannot use 1 << 40"},
		{"linux", "arm", "(overflows)"},
	} {
		_, errs := check(c.goos, c.goarch, false, "testdata/mod", "./...")
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%s/%s: errors %v; want %q", c.goos, c.goarch, errs, c.want)
		}
	}
	// With its tests, the package checks for 64 bits, and for 32 the
	// test's own overflow is found beside the package's.
	if n, errs := check("linux", "arm64", true, "testdata/mod", "./..."); len(errs) != 0 || n < 2 {
		t.Errorf("linux/arm64 with tests: %d packages, errors %v; want the package and its test variant, no errors", n, errs)
	}
	_, errs := check("linux", "386", true, "testdata/mod", "./...")
	var found bool
	for _, e := range errs {
		found = found || strings.Contains(e.Error(), "size_test.go:8:")
	}
	if !found {
		t.Errorf("linux/386 with tests: errors %v; want size_test.go's overflow", errs)
	}
}
