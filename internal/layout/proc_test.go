package layout

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// TestProcReadInProc: what the kernel writes in /proc is read and parsed
// in internal/proc alone, so that one package knows its formats: no
// other Go file of the tree (the bench programs included, tests aside)
// reads a /proc file whole (os.ReadFile of a path that begins with
// "/proc"). Opening a /proc path (a process's memory, a link to
// follow, a descriptor to reopen) is not parsing, and stays where it is
// needed.
func TestProcReadInProc(t *testing.T) {
	var bad []string
	skip := func(rel string) bool { return rel == "internal/proc" || rel == "interop" }
	eachGoFile(t, skip, func(rel string, fset *token.FileSet, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "ReadFile" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "os" {
				return true
			}
			if strings.HasPrefix(leftmostString(call.Args[0]), "/proc") {
				bad = append(bad, rel+":"+strconv.Itoa(fset.Position(call.Pos()).Line)+": reads /proc outside internal/proc")
			}
			return true
		})
	})
	for _, b := range bad {
		t.Error(b)
	}
}

// leftmostString is the string literal an expression begins with ("a" +
// x begins with "a"), "" when it begins with something else.
func leftmostString(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			e = x.X
		case *ast.CallExpr: // filepath.Join("/proc", …)
			if len(x.Args) == 0 {
				return ""
			}
			e = x.Args[0]
		case *ast.BasicLit:
			s, _ := strconv.Unquote(x.Value)
			return s
		default:
			return ""
		}
	}
}
