package editors_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMissingGemkit: with no gemkit where the setting points, each plugin
// tells the person which setting to fix, and nothing is served.
func TestMissingGemkit(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-such-gemkit")
	cases := []struct {
		name  string
		start func(t *testing.T, h *harness) driver
		want  []string
	}{
		{"neovim", func(t *testing.T, h *harness) driver {
			return startNvim(t, h, requireEditor(t, "nvim", "neovim"), missing)
		}, []string{"cannot start '" + missing + "'", "setup{ cmd = "}},
		{"vim", func(t *testing.T, h *harness) driver {
			return startVim(t, h, requireEditor(t, "vim", "vim-nox"), requireEditor(t, "tmux", "tmux"), missing)
		}, []string{"cannot run '" + missing + "'", "g:gemkit_cmd"}},
		{"emacs", func(t *testing.T, h *harness) driver {
			return startEmacs(t, h, requireEditor(t, "emacs", "emacs-nox"), requireEditor(t, "emacsclient", "emacs-nox"), requireEditor(t, "tmux", "tmux"), missing)
		}, []string{"cannot find", missing, "gemkit-program"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			d := c.start(t, h)
			var msgs string
			waitFor(t, "the editor telling what to fix", func() bool {
				msgs = d.Messages(t)
				for _, w := range c.want {
					if !strings.Contains(msgs, w) {
						return false
					}
				}
				return true
			})
			if entries, _ := os.ReadDir(h.discoveryDir); len(entries) != 0 {
				t.Fatalf("a discovery file exists without gemkit: %v", entries)
			}
			d.Quit(t)
			select {
			case <-d.Exited():
			case <-time.After(waitTimeout):
				t.Fatal("the editor did not exit")
			}
		})
	}
}
