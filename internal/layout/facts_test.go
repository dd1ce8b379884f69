package layout

import (
	"bytes"
	"go/ast"
	"go/printer"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A home is the one function that holds a fact every sandboxed process's
// profile needs: no other function of the tree may hold the same code
// (the same statements, whatever its names), which is how each of these
// came to be written five times.
type home struct{ file, fn string }

var homes = []home{
	{"internal/envmap/envmap.go", "Of"},
	{"internal/fsutil/fsutil.go", "RealPath"},
	{"internal/permission/paths.go", "ClosedOf"},
	{"internal/proc/peercred/peercred_linux.go", "FD"},
	{"internal/proc/peercred/peercred_bsd.go", "FD"},
	{"internal/gemkitdir/runtime.go", "MakeRuntime"},
	{"internal/sandbox/serverprofile.go", "PrivateDir"},
	{"internal/progsearch/progsearch.go", "Look"},
	{"internal/progsearch/progsearch.go", "Interpreter"},
	{"internal/progsearch/progsearch.go", "InterpreterAt"},
	{"internal/progsearch/progsearch.go", "Prefix"},
}

// oldNames are the names the facts had where they were written again
// (envMap, realPath, …): a function of that name anywhere is one more
// copy.
var oldNames = []string{"envMap", "realPath", "real", "LookServer", "SearchLook", "privateDirs", "peerCred", "samePeer", "fdPeerUID"}

// TestOneHomePerFact: each fact of the profiles of sandboxed processes
// has one home, and nothing in the tree (tests and interop's npm
// packages aside) writes it again:
//   - an environment read as a map (envmap.Of), a path's real name
//     (fsutil.RealPath), program search (progsearch), the private-folder
//     rule (sandbox.PrivateDir), the runtime folder made (gemkitdir.
//     MakeRuntime), a socket's peer (peercred.FD): no other function has
//     the same body (shape), and none has a name such a copy had;
//   - the closed inputs: no permission.ClosedInputs{…} but ClosedOf's,
//     and no list of the temporary folders ($TEMP with os.TempDir())
//     but ClosedOf's;
//   - socket credentials (SO_PEERCRED, LOCAL_PEERCRED) read in
//     internal/proc/peercred alone;
//   - gemkit's folders in /tmp named in internal/gemkitdir alone: no
//     filepath.Join of "/tmp" (or os.TempDir()) and "gemkit-…"
//     elsewhere.
func TestOneHomePerFact(t *testing.T) {
	type fn struct{ at, shape string }
	var fns []fn
	want := map[home]string{}
	var bad []string
	skip := func(rel string) bool { return rel == "interop" }
	eachGoFile(t, skip, func(rel string, fset *token.FileSet, f *ast.File) {
		at := func(n ast.Node) string { return rel + ":" + strconv.Itoa(fset.Position(n.Pos()).Line) }
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				s := shape(f, fd.Body)
				if slices.Contains(homes, home{rel, fd.Name.Name}) {
					want[home{rel, fd.Name.Name}] = s
				} else {
					fns = append(fns, fn{at(fd) + " " + fd.Name.Name, s})
				}
				if slices.Contains(oldNames, fd.Name.Name) {
					bad = append(bad, at(fd)+": defines "+fd.Name.Name+", a fact with a home of its own")
				}
			}
		}
		bad = append(bad, literalFacts(rel, f, at)...)
	})
	for _, h := range homes {
		if want[h] == "" {
			t.Errorf("%s has no function %s: update homes", h.file, h.fn)
			continue
		}
		for _, f := range fns {
			if f.shape == want[h] {
				bad = append(bad, f.at+": the same code as "+h.file+" "+h.fn+": call it")
			}
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// literalFacts are the places of file f (at rel) that build a fact by
// hand that has a home: the closed inputs, the closed temporary folders,
// socket credentials, gemkit's folders in /tmp.
func literalFacts(rel string, f *ast.File, at func(ast.Node) string) []string {
	var bad []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if typeName(n.Type) == "ClosedInputs" && rel != "internal/permission/paths.go" {
				bad = append(bad, at(n)+": builds ClosedInputs by hand (permission.ClosedOf)")
			}
			if _, list := n.Type.(*ast.ArrayType); list && hasString(n, "TEMP") && hasCall(n, "os", "TempDir") && rel != "internal/permission/paths.go" {
				bad = append(bad, at(n)+": lists the closed temporary folders (permission.ClosedOf)")
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && (x.Name == "unix" || x.Name == "syscall") &&
				(n.Sel.Name == "SO_PEERCRED" || n.Sel.Name == "LOCAL_PEERCRED") && !strings.HasPrefix(rel, "internal/proc/peercred/") {
				bad = append(bad, at(n)+": reads socket credentials (internal/proc/peercred)")
			}
		case *ast.CallExpr:
			if isCall(n, "filepath", "Join") && !strings.HasPrefix(rel, "internal/gemkitdir/") && inTemp(n) {
				for _, a := range n.Args {
					if s := leftmostString(a); strings.HasPrefix(s, "gemkit-") || strings.HasPrefix(s, "/tmp/gemkit") {
						bad = append(bad, at(n)+": names a folder of gemkit's in /tmp (internal/gemkitdir)")
						break
					}
				}
			}
		}
		return true
	})
	return bad
}

// inTemp reports whether the call's first argument is /tmp or
// os.TempDir().
func inTemp(c *ast.CallExpr) bool {
	if len(c.Args) == 0 {
		return false
	}
	first, ok := c.Args[0].(*ast.CallExpr)
	return stringLit(c.Args[0]) == "/tmp" || strings.HasPrefix(leftmostString(c.Args[0]), "/tmp/") || ok && isCall(first, "os", "TempDir")
}

// shape is body as printed with every name but a package's (strings of
// strings.Cut) written _, and every type made of names written _ too, so
// that a copy with other names has the same shape.
func shape(f *ast.File, body *ast.BlockStmt) string {
	pkgs := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = true
	}
	var keep []*ast.Ident
	ast.Inspect(body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && pkgs[x.Name] {
				keep = append(keep, x, sel.Sel)
			}
		}
		return true
	})
	renamed := map[*ast.Ident]string{}
	ast.Inspect(body, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && !slices.Contains(keep, id) {
			renamed[id] = id.Name
			id.Name = "_"
		}
		return true
	})
	var b bytes.Buffer
	printer.Fprint(&b, token.NewFileSet(), body)
	for id, name := range renamed {
		id.Name = name
	}
	return typeShape.ReplaceAllString(b.String(), "_")
}

// typeShape is a type written out of names (map[_]_, []_, *_): a copy
// may spell the type its home names.
var typeShape = regexp.MustCompile(`(map\[_\]|\[\]|\*)+_`)

// typeName is the name of a composite literal's type (ClosedInputs of
// permission.ClosedInputs), "" for an unnamed one.
func typeName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}

// hasString reports whether the string literal s stands anywhere in n.
func hasString(n ast.Node, s string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && stringLit(e) == s {
			found = true
		}
		return !found
	})
	return found
}

// hasCall reports whether n calls pkg.name anywhere.
func hasCall(n ast.Node, pkg, name string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && isCall(c, pkg, name) {
			found = true
		}
		return !found
	})
	return found
}

// isCall reports whether c calls pkg.name.
func isCall(c *ast.CallExpr, pkg, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg
}

// stringLit is the value of a string literal, "" for anything else.
func stringLit(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, _ := strconv.Unquote(lit.Value)
	return s
}

// TestNoBorrowedRooms: the hooks' and the installs' packages (exthook,
// pkgrun) reach neither code intelligence's language servers
// (langserver) nor its brokers (lspbroker), not even through another
// package: they once imported them for program search and a socket
// folder, which have homes of their own (progsearch, gemkitdir).
func TestNoBorrowedRooms(t *testing.T) {
	g := imports(t)
	for _, p := range []string{"internal/exthook", "internal/pkgrun"} {
		if _, ok := g[p]; !ok {
			t.Fatalf("no package %s: update the test", p)
		}
		seen := map[string]bool{}
		var walk func(q string, via []string)
		walk = func(q string, via []string) {
			if seen[q] {
				return
			}
			seen[q] = true
			if q == "internal/langserver" || q == "internal/lspbroker" {
				t.Errorf("%s imports %s (%s)", p, q, strings.Join(append(via, q), " → "))
				return
			}
			for _, r := range g[q] {
				walk(r, append(via[:len(via):len(via)], q))
			}
		}
		walk(p, nil)
	}
}
