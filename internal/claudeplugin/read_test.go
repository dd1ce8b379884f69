package claudeplugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
)

// TestList plays testdata/read/*.txtar: each section is a file under a
// temp folder ($ROOT), "symlink:NAME" a link to what it holds, and
// "want" what List(cfg, project) gives as JSON (go test -update writes
// it). The cases are the ways a reading could differ from Claude Code's:
// keys in other letters, a member given twice, a value of another type,
// a missing file, one that cannot be read, a link out of the plugin.
func TestList(t *testing.T) {
	golden.Transcripts(t, "testdata/read", func(t *testing.T, a *golden.Archive) {
		root := t.TempDir()
		for _, s := range a.Sections {
			if s.Name == "want" {
				continue
			}
			name, isLink := strings.CutPrefix(s.Name, "symlink:")
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			data := strings.ReplaceAll(s.Data, "$ROOT", root)
			var err error
			if isLink {
				err = os.Symlink(strings.TrimSpace(data), p)
			} else {
				err = os.WriteFile(p, []byte(data), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		h, err := List(filepath.Join(root, "cfg"), filepath.Join(root, "project"))
		var got []byte
		if err != nil {
			got = []byte("error: " + err.Error())
		} else if got, err = json.MarshalIndent(h, "", "  "); err != nil {
			t.Fatal(err)
		}
		a.Set("want", strings.ReplaceAll(string(got), root, "$ROOT")+"\n")
	})
}

// TestListNoHome: with neither HOME nor CLAUDE_CONFIG_DIR there is no
// folder to read, and List says so rather than read the working folder.
func TestListNoHome(t *testing.T) {
	dir := Folder(func(string) string { return "" }, "", "")
	if _, err := List(dir, ""); err == nil || !strings.Contains(err.Error(), "CLAUDE_CONFIG_DIR") {
		t.Fatalf("List(%q) = %v, want an error naming CLAUDE_CONFIG_DIR", dir, err)
	}
}
