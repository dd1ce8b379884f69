//go:build linux

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestQuick runs two questions of each kind each way, so that the
// harness cannot rot.
func TestQuick(t *testing.T) {
	gemkittest.Tool(t, "nvim-0.10", "bash scripts/install-neovim-current")
	codeinteltest.Gopls(t)
	var out strings.Builder
	if err := run([]string{"-n", "2", "-gemkit", gemkittest.Gemkit(t)}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"definition (Greet", "references (Store.Total", "the relay alone", "| gopls processes for the workspace | 1 (Neovim's) |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMain(m *testing.M) { os.Exit(gemkittest.Main(m)) }
