package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// agentFolders are the agents' folders under a home folder: each is
// spelled once, in the agents table (ide/agents.go, Agent.HomeDir).
// ".local" stands for gemkit's data folder, spelled once in
// internal/gemkitdir with gemkit's other folders.
var agentFolders = []string{".gemini", ".claude", ".qwen", ".local"}

// spelledAt are the files allowed to spell the folders: the one place
// of each.
var spelledAt = []string{"ide/agents.go", "internal/gemkitdir/gemkitdir.go"}

// joinsGemkit are the files that may join a literal "gemkit" into a
// path: internal/gemkitdir, and the test helpers that name the gemkit
// binary they build (a file, not a folder of gemkit's).
var joinsGemkit = []string{"internal/gemkitdir/gemkitdir.go", "internal/gemkittest/gemkittest.go", "internal/gemkittest/sharedbin.go"}

// TestOneNamePerFact: gemkit's own folders and the agents' folders are
// computed in one place each, below internal/permission, which closes
// them to tools: no other Go file of the product (tests and the bench
// programs, which write real peers' homes deliberately, aside) spells
// ".gemini", ".claude", ".qwen" or ".local", or joins "gemkit" into a
// path, so that what is closed is what is written.
func TestOneNamePerFact(t *testing.T) {
	var bad []string
	skip := func(rel string) bool { return rel == "bench" || rel == "interop" || rel == "scripts" }
	eachGoFile(t, skip, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && slices.Contains(agentFolders, s) && !slices.Contains(spelledAt, rel) {
					bad = append(bad, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": spells "+n.Value+" (ide.Agent….HomeDir, internal/gemkitdir)")
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Join" || slices.Contains(joinsGemkit, rel) {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "filepath" {
					return true
				}
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok && lit.Value == `"gemkit"` {
						bad = append(bad, rel+":"+strconv.Itoa(fset.Position(n.Pos()).Line)+": joins \"gemkit\" into a path (internal/gemkitdir)")
					}
				}
			}
			return true
		})
	})
	for _, b := range bad {
		t.Error(b)
	}
}

// eachGoFile parses each non-test Go file of the module (interop's npm
// packages, testdata and hidden folders aside, and the folders skip
// names by their path from the module's root) and hands it to visit
// with that path.
func eachGoFile(t *testing.T, skip func(rel string) bool, visit func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skip(rel) || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		visit(rel, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
