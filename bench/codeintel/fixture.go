//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The Go module measured: the tests' Go shop, grown by generated
// packages so that references have many answers.

// makeFixture copies the tests' Go shop to ws and adds pkgs generated
// packages, each function of which calls greet.Greet.
func makeFixture(root, ws string, pkgs int) error {
	src := filepath.Join(root, "internal", "codeintel", "codeinteltest", "testdata", "go")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(ws, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ws, rel), b, 0o644)
	})
	if err != nil {
		return err
	}
	for p := range pkgs {
		dir := filepath.Join(ws, "gen", fmt.Sprintf("p%02d", p))
		os.MkdirAll(dir, 0o755)
		for f := range 5 {
			var b strings.Builder
			fmt.Fprintf(&b, "package p%02d\n\nimport \"example.com/shop/greet\"\n\n", p)
			for i := range 10 {
				fmt.Fprintf(&b, "// F%d_%d greets the %d-th visitor.\nfunc F%d_%d() string {\n\treturn greet.Greet(\"visitor %d\")\n}\n\n", f, i, f*10+i, f, i, f*10+i)
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
