package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxFunctionLines is the most body lines a function may have, anywhere
// in the module (tests and benchmarks too): past it a function does
// several steps that want names of their own (issues 47 and 73).
const maxFunctionLines = 100

// funcSize is one function or method and its body lines: the lines
// between its braces.
type funcSize struct {
	pos   string // file:line of its declaration
	name  string // Recv.Name for a method
	lines int
}

// functionLines returns every function and method declared in the Go
// files under dir, tests included, with its size: node_modules,
// testdata, hidden folders and other modules (a folder with a go.mod of
// its own) left out.
func functionLines(t *testing.T, dir string) []funcSize {
	t.Helper()
	var out []funcSize
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != dir {
			name := d.Name()
			if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				name = recvName(fn.Recv.List[0].Type) + "." + name
			}
			open := fset.Position(fn.Body.Lbrace)
			shut := fset.Position(fn.Body.Rbrace)
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, funcSize{
				pos:   fmt.Sprintf("%s:%d", filepath.ToSlash(rel), fset.Position(fn.Pos()).Line),
				name:  name,
				lines: max(shut.Line-open.Line-1, 0),
			})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("parsing %s: %v", dir, err)
	}
	return out
}

// recvName is a method's receiver type as written, pointer and type
// parameters aside.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// TestFunctionsShort: no function of the module (its tests, benchmarks
// and scripts too) has a body over maxFunctionLines lines. The sandbox's
// parent side is where a reviewer must see every step of a launch, and
// every other room is read the same way: a function that long hides one
// step inside another. With -v it lists the longest.
func TestFunctionsShort(t *testing.T) {
	fns := functionLines(t, moduleRoot(t))
	if !slices.ContainsFunc(fns, func(f funcSize) bool { return strings.HasPrefix(f.pos, "internal/sandbox/") }) {
		t.Fatal("no functions found under internal/sandbox: has the module moved?")
	}
	var bad []string
	for _, f := range fns {
		if f.lines > maxFunctionLines {
			bad = append(bad, fmt.Sprintf("%s: %s is %d lines (at most %d)", f.pos, f.name, f.lines, maxFunctionLines))
		}
	}
	slices.Sort(bad)
	for _, b := range bad {
		t.Error(b)
	}
	if testing.Verbose() {
		slices.SortFunc(fns, func(a, b funcSize) int { return b.lines - a.lines })
		for _, f := range fns[:min(len(fns), 15)] {
			t.Logf("%4d %s %s", f.lines, f.name, f.pos)
		}
	}
}
