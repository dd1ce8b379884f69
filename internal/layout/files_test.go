package layout

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFileLines bounds a non-test Go file: past it a file holds more than
// one thing, and a reader cannot find the one a change touches.
const maxFileLines = 600

// moduleRoot is the folder of the module's go.mod, above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("the module's root: %v", err)
	}
	return dir
}

// goFileLines are the lines of every non-test Go file of the module, by
// path from its root: node_modules, testdata, hidden folders and other
// modules (a folder with a go.mod of its own) left out.
func goFileLines(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p == root {
				return nil
			}
			if name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFilesShort: no non-test Go file of the module is over maxFileLines
// lines (as wc -l counts them).
func TestFilesShort(t *testing.T) {
	lines := goFileLines(t, moduleRoot(t))
	var bad []string
	for p, n := range lines {
		if n > maxFileLines {
			bad = append(bad, fmt.Sprintf("%s: %d lines", p, n))
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Errorf("%s, over %d: split it by concern into files that each hold one thing", b, maxFileLines)
	}
}

// maxCLILines bounds internal/cli's non-test lines, all its files
// together: the command package keeps flags and words, and what the
// commands do lives in the rooms below it (the switch in
// internal/extswitch, what list, describe and doctor show in
// internal/extview; issue 73, when it held 11.6k lines).
const maxCLILines = 7500

// TestCLIShort: internal/cli's non-test Go files hold under maxCLILines
// lines together (as `find internal/cli -name '*.go' ! -name '*_test.go'
// | xargs cat | wc -l` counts them).
func TestCLIShort(t *testing.T) {
	total := 0
	for p, n := range goFileLines(t, moduleRoot(t)) {
		if strings.HasPrefix(p, "internal/cli/") {
			total += n
		}
	}
	if total == 0 {
		t.Fatal("no non-test Go file found under internal/cli: has it moved?")
	}
	if total >= maxCLILines {
		t.Errorf("internal/cli holds %d non-test lines, %d or more: move what a command does (not its flags and words) into the package of what it works on", total, maxCLILines)
	}
}
