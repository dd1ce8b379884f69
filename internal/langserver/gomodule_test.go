package langserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
)

func TestUnprovidedImport(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		// gopls v0.23.0's words (TestMissingModuleGopls).
		{`could not import github.com/fatih/camelcase (no required module provides package "github.com/fatih/camelcase")`, "github.com/fatih/camelcase"},
		{`could not import example.com/absent/wrap (no required module provides package "example.com/absent/wrap")`, "example.com/absent/wrap"},
		// Its other reasons for an import it has no package for.
		{`could not import example.com/x (current file is not included in a workspace module)`, ""},
		{`could not import example.com/x (cannot find package "example.com/x" in GOROOT or GOPATH)`, ""},
		{`could not import example.com/x (missing metadata for import of "example.com/x")`, ""},
		// The two paths must agree.
		{`could not import example.com/x (no required module provides package "example.com/y")`, ""},
		{`could not import  (no required module provides package "")`, ""},
		{`undefined: camelcase.Split`, ""},
		{``, ""},
	} {
		if got := unprovidedImport(c.msg); got != c.want {
			t.Errorf("unprovidedImport(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

func TestRequiredModule(t *testing.T) {
	const gomod = `module example.com/shop // the shop

go 1.22

require github.com/fatih/camelcase v1.0.9

require (
	example.com/a v1.2.0 // indirect
	example.com/a/b v0.3.0
	"example.com/quoted" v1.0.0
	example.com/local v1.0.0
	example.com/ab/v2 v2.0.0
)

replace example.com/local => ../local

exclude (
	example.com/a v1.1.0
)
`
	for _, c := range []struct{ pkg, mod, ver string }{
		{"github.com/fatih/camelcase", "github.com/fatih/camelcase", "v1.0.9"},
		{"example.com/a", "example.com/a", "v1.2.0"},
		{"example.com/a/c", "example.com/a", "v1.2.0"},
		{"example.com/a/b/c", "example.com/a/b", "v0.3.0"}, // the longest path
		{"example.com/ab/v2/x", "example.com/ab/v2", "v2.0.0"},
		{"example.com/ab/x", "", ""}, // a path, not a module: ab/v2 is not ab
		{"example.com/quoted/x", "example.com/quoted", "v1.0.0"},
		{"example.com/local/x", "", ""}, // replaced
		{"example.com/abc", "", ""},     // at a slash only
		{"example.com/shop/greet", "", ""},
		{"github.com/other/pkg", "", ""},
	} {
		if mod, ver := requiredModule([]byte(gomod), c.pkg); mod != c.mod || ver != c.ver {
			t.Errorf("requiredModule(%q) = %q %q, want %q %q", c.pkg, mod, ver, c.mod, c.ver)
		}
	}
	// A go.mod the go command refuses (a v2 module without its /v2)
	// names no module: gopls's own go.mod error says what is wrong.
	if mod, _ := requiredModule([]byte("module m\n\nrequire example.com/ab v2.0.0\n"), "example.com/ab/x"); mod != "" {
		t.Errorf("a go.mod the go command refuses gave %q", mod)
	}
}

func TestInGoSum(t *testing.T) {
	sum := []byte("example.com/a v1.0.0 h1:abc=\nexample.com/a v1.0.0/go.mod h1:def=\nexample.com/b v1.0.0/go.mod h1:ghi=\n")
	for _, c := range []struct {
		mod, ver string
		want     bool
	}{
		{"example.com/a", "v1.0.0", true},
		{"example.com/b", "v1.0.0", false}, // only its go.mod's hash
		{"example.com/a", "v1.0.1", false},
	} {
		if got := inGoSum(sum, c.mod, c.ver); got != c.want {
			t.Errorf("inGoSum(%s@%s) = %v, want %v", c.mod, c.ver, got, c.want)
		}
	}
}

// moduleFix speaks for a module go.mod requires and the cache lacks,
// with the command that fills the cache (naming the module when go.sum
// lacks its hash), and only for gopls with no hosts allowed.
func TestModuleFix(t *testing.T) {
	ws, cache := t.TempDir(), t.TempDir()
	sub := filepath.Join(ws, "tools")
	for name, text := range map[string]string{
		"go.mod":       "module example.com/shop\n\ngo 1.22\n\nrequire (\n\tgithub.com/BurntSushi/toml v1.4.0\n\texample.com/gone v1.0.0\n)\n",
		"go.sum":       "example.com/gone v1.0.0 h1:x=\n",
		"tools/go.mod": "module example.com/shop/tools\n\ngo 1.22\n\nrequire example.com/gone v1.0.0\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The cache holds toml, its capitals escaped as the go command does.
	if err := os.MkdirAll(filepath.Join(cache, "github.com", "!burnt!sushi", "toml@v1.4.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A folder of the workspace that links out of it, to a module of its
	// own: its go.mod is not the workspace's to read.
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "go.mod"), []byte("module example.com/out\n\ngo 1.22\n\nrequire example.com/gone v1.0.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(ws, "linked")); err != nil {
		t.Fatal(err)
	}
	gopls := Server{Name: "gopls", Extensions: map[string]string{".go": "go"}}
	msg := func(pkg string) codeintel.Diagnostic {
		return codeintel.Diagnostic{Message: `could not import ` + pkg + ` (no required module provides package "` + pkg + `")`}
	}
	p := &Pool{ws: ws, env: []string{"GOMODCACHE=" + cache}}
	main, tool := filepath.Join(ws, "main.go"), filepath.Join(sub, "t.go")
	for _, c := range []struct {
		name string
		s    Server
		file string
		ds   []codeintel.Diagnostic
		want string
	}{
		{"missing", gopls, main, []codeintel.Diagnostic{msg("example.com/gone/x"), msg("example.com/gone")},
			"so it cannot download example.com/gone@v1.0.0, which the module cache it reads (" + cache + ") lacks: run `go mod download` in " + ws + " yourself"},
		{"nested module, no go.sum", gopls, tool, []codeintel.Diagnostic{msg("example.com/gone")},
			"run `go mod download example.com/gone` in " + sub + " yourself"},
		{"a go.mod out of the workspace, through a linked folder", gopls, filepath.Join(ws, "linked", "x.go"), []codeintel.Diagnostic{msg("example.com/gone")}, ""},
		{"in the cache", gopls, main, []codeintel.Diagnostic{msg("github.com/BurntSushi/toml")}, ""},
		{"not required", gopls, main, []codeintel.Diagnostic{msg("example.com/other")}, ""},
		{"another message", gopls, main, []codeintel.Diagnostic{{Message: "undefined: x"}}, ""},
		{"hosts allowed", Server{Name: "gopls", Extensions: gopls.Extensions, AllowedHosts: []string{"proxy.golang.org"}}, main, []codeintel.Diagnostic{msg("example.com/gone")}, ""},
		{"not gopls", Server{Name: "pyright", Extensions: map[string]string{".py": "python"}}, main, []codeintel.Diagnostic{msg("example.com/gone")}, ""},
	} {
		got := p.moduleFix(c.s, c.file, c.ds)
		switch {
		case c.want == "":
			if got != "" {
				t.Errorf("%s: moduleFix = %q, want none", c.name, got)
			}
		case !strings.Contains(got, c.want) || strings.Count(got, "example.com/gone@") != 1:
			t.Errorf("%s: moduleFix = %q, want it to hold %q, the module once", c.name, got, c.want)
		}
	}
	// No module cache named: gopls reads an empty one of its own.
	noCache := &Pool{ws: ws, env: nil}
	if got := noCache.moduleFix(gopls, main, []codeintel.Diagnostic{msg("example.com/gone")}); !strings.Contains(got, "set GOMODCACHE to yours") {
		t.Errorf("without a module cache: %q", got)
	}
}
