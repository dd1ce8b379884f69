package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestREADMEQuotesLSPDocs: the README's example of gemkit as a language
// server for Neovim is docs/lsp.md's Neovim configuration, the one the
// editors tests run in the real Neovim, quoted whole; an abridged copy
// drifts (it lost the guard that keeps terminals and other special
// buffers away from the server).
func TestREADMEQuotesLSPDocs(t *testing.T) {
	root := gemkittest.RepoRoot(t)
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	docs := regexp.MustCompile("(?s)\n### Neovim \\(built-in client[^\n]*\n.*?\n```lua\n(.*?\n)```\n").FindSubmatch(read("docs/lsp.md"))
	if docs == nil {
		t.Fatal("docs/lsp.md: no lua block under ### Neovim (built-in client…)")
	}
	readme := regexp.MustCompile("(?s)\n```lua\n(.*?\n)```\n").FindAllSubmatch(read("README.md"), -1)
	if len(readme) != 1 {
		t.Fatalf("README.md has %d lua blocks; want the one Neovim example", len(readme))
	}
	if string(readme[0][1]) != string(docs[1]) {
		t.Errorf("README.md's Neovim example differs from docs/lsp.md's; quote it whole.\nREADME.md:\n%s\ndocs/lsp.md:\n%s", readme[0][1], docs[1])
	}
}
