package main

import (
	"strings"
	"testing"
)

// TestCheck: a package whose windows files leave a name undefined
// type-checks for darwin and fails for windows, with the compiler's
// words and the file.
func TestCheck(t *testing.T) {
	if n, errs := check("darwin", "testdata/mod", "./..."); len(errs) != 0 || n != 1 {
		t.Errorf("darwin: %d packages, errors %v; want 1 and none", n, errs)
	}
	_, errs := check("windows", "testdata/mod", "./...")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "mod.go:4:29: undefined: name") {
		t.Errorf("windows: errors %v; want mod.go's undefined name", errs)
	}
}
