package claudeswitch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/golden"
)

// TestConvert plays testdata/convert/*.txtar: every section but "config"
// and "want" is a file of the plugin's folder ("symlink:NAME" a link to
// what it holds), "config" the person's user_config values (JSON), and
// "want" what Convert made (each file of the twin extension and the
// twin plugin) or the error that refused it (go test -update writes
// it). The cases are a plugin of every part and each class the switch
// refuses: a variable it does not convert, a hook that is not a
// command, an event it does not run, a key it does not know, a file
// that is not JSON as Claude Code reads it, a link out of the folder.
func TestConvert(t *testing.T) {
	golden.Transcripts(t, "testdata/convert", func(t *testing.T, a *golden.Archive) {
		dir := t.TempDir()
		conf := map[string]string{}
		for _, s := range a.Sections {
			switch name, isLink := strings.CutPrefix(s.Name, "symlink:"); {
			case s.Name == "want":
			case s.Name == "config":
				if err := json.Unmarshal([]byte(s.Data), &conf); err != nil {
					t.Fatal(err)
				}
			default:
				writeCase(t, dir, name, s.Data, isLink)
			}
		}
		a.Set("want", convertCase(t, dir, conf))
	})
}

// writeCase writes one section of a case under dir.
func writeCase(t *testing.T, dir, name, data string, isLink bool) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
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

// convertCase converts the plugin in dir as the switch does (its digest
// first, which refuses links out) and writes what came of it.
func convertCase(t *testing.T, dir string, conf map[string]string) string {
	r, err := fsutil.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := ReadDigest(r); err != nil {
		return "error: " + strings.ReplaceAll(err.Error(), dir, "$PLUGIN") + "\n"
	}
	in := Input{Plugin: "notes", Market: "mk", Home: "/TH", Gemkit: "/bin/gemkit", Vars: Vars{Data: "/DATA/notes-mk", UserConfig: conf}}
	tw, err := Convert(r, in)
	if err != nil {
		return "error: " + strings.ReplaceAll(err.Error(), dir, "$PLUGIN") + "\n"
	}
	var b strings.Builder
	for _, part := range []struct {
		where string
		files map[string][]byte
	}{{"extension", tw.Extension}, {"plugin", tw.Plugin}} {
		var names []string
		for n := range part.files {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			b.WriteString("== " + part.where + " " + n + " ==\n")
			b.Write(part.files[n])
		}
	}
	return b.String()
}

// TestTwinName: each plugin and marketplace name makes a valid
// extension name, the characters one cannot hold made "-".
func TestTwinName(t *testing.T) {
	for _, c := range []struct{ p, m, want string }{
		{"notes", "mk", "notes-mk"},
		{"a.b", "my_market", "a-b-my-market"},
		{"a-b", "my-market", "a-b-my-market"},
		{"ünï", "mk", "n--mk"},
		{"-x", "mk", "x-mk"},
	} {
		if got := TwinName(c.p, c.m); got != c.want {
			t.Errorf("TwinName(%q, %q) = %q, want %q", c.p, c.m, got, c.want)
		}
	}
	if got, want := toolPrefix("my.notes"), "mcp__plugin_my_notes_sandbox__"; got != want {
		t.Errorf("toolPrefix = %q, want %q", got, want)
	}
}
