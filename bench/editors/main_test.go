//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestQuick runs one round of every step on gemkit.nvim so that the
// harness cannot rot (the real Claude Code's starts are left to the
// bench itself, and so are Gemini CLI's).
func TestQuick(t *testing.T) {
	gemkittest.Tool(t, "tmux", "tmux")
	gemkittest.Tool(t, "nvim", "neovim")
	var out strings.Builder
	if err := run([]string{"-n", "1", "-claude", "none", "-gemini", "none", "-nvim", "nvim"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gemkit.nvim", "connect: dial → initialize answered", "selection (V j) → agent", "openDiff → diff drawn", "idle RSS"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
