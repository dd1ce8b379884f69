package editors_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/ide"
)

// pluginMethods are the three plugins' tables of the LSP requests they
// let lsp/request carry: each table is read from the plugin's file, as
// the editor reads it, between the line that opens it and the line that
// closes it; entry matches one entry and gives the method and, where the
// table has one, the server capability it names.
var pluginMethods = []struct {
	file         string
	open, close  string
	entry        *regexp.Regexp
	capabilities bool
}{
	{file: "nvim/lua/gemkit/lsp.lua", open: "local allowed = {", close: "}",
		entry: regexp.MustCompile(`^\s*\['([^']+)'\]\s*=\s*true,$`)},
	{file: "vim/autoload/gemkit/lsp.vim", open: "let s:methods = {", close: `\ }`,
		entry: regexp.MustCompile(`^\s*\\\s*'([^']+)':\s*'[a-z_A-Z]*',$`)},
	{file: "emacs/gemkit-lsp.el", open: "(defconst gemkit-lsp--capabilities", close: `"The LSP requests gemkit may ask`,
		entry: regexp.MustCompile(`^\s*'?\(*"([^"]+)"\s*\.\s*:([A-Za-z]+)\)\)?$`), capabilities: true},
}

// TestLSPMethodTables: the plugins' tables of the LSP requests they
// forward are ide.LSPMethods, in its order, and Emacs's capabilities
// are ide.LSPCapability's: a method added to (or dropped from) the Go
// table and not to a plugin fails here, as does a plugin line this test
// cannot read.
func TestLSPMethodTables(t *testing.T) {
	for _, p := range pluginMethods {
		t.Run(filepath.Base(p.file), func(t *testing.T) {
			b, err := os.ReadFile(p.file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == p.open })
			if start < 0 {
				t.Fatalf("%s has no line %q opening its table of LSP methods", p.file, p.open)
			}
			var methods []string
			closed := false
			for i, l := range lines[start+1:] {
				if strings.HasPrefix(strings.TrimSpace(l), p.close) {
					closed = true
					break
				}
				m := p.entry.FindStringSubmatch(l)
				if m == nil {
					t.Fatalf("%s:%d: %q is not an entry of the table of LSP methods as this test reads them", p.file, start+2+i, l)
				}
				methods = append(methods, m[1])
				if p.capabilities {
					if want := ide.LSPCapability(m[1]); m[2] != want {
						t.Errorf("%s:%d: %s needs the capability %q, not %q (ide/lsp.go)", p.file, start+2+i, m[1], want, m[2])
					}
				}
			}
			if !closed {
				t.Fatalf("%s: the table of LSP methods opened at line %d is never closed by %q", p.file, start+1, p.close)
			}
			if !slices.Equal(methods, ide.LSPMethods) {
				t.Errorf("%s forwards %v; ide.LSPMethods (ide/lsp.go) are %v: make them the same, in the same order", p.file, methods, ide.LSPMethods)
			}
		})
	}
}
