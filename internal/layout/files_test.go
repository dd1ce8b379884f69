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
