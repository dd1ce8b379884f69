package toolrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeTopRefusal runs a write: home tool that writes at the top of the
// home folder, directly in ~/.config and inside a folder of the home: the
// first two are refused (docs/sandbox-design.md: the folders on the way to
// gemkit's own take no new entries) with words that name the read-only
// folder and where the tool can write; the third is written.
func TestHomeTopRefusal(t *testing.T) {
	e := newEnv(t)
	for _, d := range []string{".config", "notes"} {
		if err := os.MkdirAll(filepath.Join(e.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ext := e.install(t, `{"name": "homewriter", "version": "1.0.0",
  "permissions": {"filesystem": {"read": "home", "write": "home"}, "network": {"allowedHosts": []}},
  "tools": [{"name": "write", "description": "writes a file", "executable": "tools/write.sh", "runtime": "shell", "args": [{"name": "path", "type": "string"}]}]}`,
		map[string]string{"tools/write.sh": "echo hi > \"$2\"\n"})
	r := e.runner()
	for _, c := range []struct {
		path, want string
	}{
		{filepath.Join(e.home, "notes.txt"), "~/notes.txt would be a new entry directly in ~, which is read-only for this tool"},
		{filepath.Join(e.home, ".config", "tool.json"), "~/.config/tool.json would be a new entry directly in ~/.config"},
		{filepath.Join(e.home, "notes", "today.txt"), ""},
	} {
		_, err := r.Run(context.Background(), Call{Extension: ext, Tool: "write", Args: map[string]any{"path": c.path}, Workspace: e.ws, GrantConsent: true})
		var te *ToolError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want == "":
		case !errors.As(err, &te):
			t.Errorf("%s: %v, want a refusal", c.path, err)
		case !strings.Contains(te.Hint, c.want) || !strings.Contains(te.Hint, "inside the other folders of your home"):
			t.Errorf("%s: hint %q, want one with %q and where the tool can write", c.path, te.Hint, c.want)
		}
	}
}
