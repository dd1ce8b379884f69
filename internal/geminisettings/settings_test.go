package geminisettings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRoundTrip: excluding names and including them again gives back
// the file byte for byte, comments and other keys included, whatever
// shape mcp.excluded had (absent file, no mcp, no excluded, an empty or
// a full list); the names already there are neither added nor removed.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		names        []string
		added        []string
		created      []string
		excluded     []string // mcp.excluded once excluded
	}{
		{name: "absent", names: []string{"memory"}, added: []string{"memory"}, created: []string{KeyMCP, KeyExcluded, KeyFile}, excluded: []string{"memory"}},
		{name: "no mcp, comments", before: `{
  // The theme I like.
  "ui": { "theme": "GitHub" }, /* keep */
  "security": {"auth": {"selectedType": "gemini-api-key"}}
}
`, names: []string{"memory", "fs"}, added: []string{"memory", "fs"}, created: []string{KeyMCP, KeyExcluded}, excluded: []string{"memory", "fs"}},
		{name: "mcp without excluded", before: `{
  "mcp": {
    "allowed": ["gemkit", "memory"] // mine
  },
  "mcpServers": {"gemkit": {"command": "gemkit", "args": ["mcp"], "trust": true}}
}`, names: []string{"memory"}, added: []string{"memory"}, created: []string{KeyExcluded}, excluded: []string{"memory"}},
		{name: "empty list", before: `{"mcp": {"excluded": []}}`, names: []string{"memory"}, added: []string{"memory"}, excluded: []string{"memory"}},
		{name: "a list of mine", before: `{
  "mcp": {
    "excluded": [
      "old", // a server I turned off
      "memory"
    ]
  }
}
`, names: []string{"memory", "fs"}, added: []string{"fs"}, excluded: []string{"old", "memory", "fs"}},
		{name: "comment with quotes and slashes", before: `{"a": "http://x/*y*/", /* "mcp": 1 */ "b": [1, 2.5e3, true, null]}`,
			names: []string{"m"}, added: []string{"m"}, created: []string{KeyMCP, KeyExcluded}, excluded: []string{"m"}},
		// Server names come from an extension's manifest, which its author
		// wrote: whatever they hold, they land as strings of the list and
		// nothing else of the file Gemini CLI reads changes.
		{name: "names an extension chose", before: `{"mcp": {"excluded": ["old"]}, "ui": {"theme": "GitHub"}}`,
			names:    []string{`a"], "allowMCPServers": ["x`, "*/ \"}, {", "line\nbreak", "// not a comment", "é"},
			added:    []string{`a"], "allowMCPServers": ["x`, "*/ \"}, {", "line\nbreak", "// not a comment", "é"},
			excluded: []string{"old", `a"], "allowMCPServers": ["x`, "*/ \"}, {", "line\nbreak", "// not a comment", "é"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".gemini", "settings.json")
			if tc.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			added, created, err := Exclude(path, tc.names)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(added, tc.added) || !slices.Equal(created, tc.created) {
				t.Errorf("added %v created %v, want %v %v", added, created, tc.added, tc.created)
			}
			st, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(st.Excluded, tc.excluded) {
				mid, _ := os.ReadFile(path)
				t.Errorf("excluded %v, want %v; file:\n%s", st.Excluded, tc.excluded, mid)
			}
			mid, _ := os.ReadFile(path)
			for _, c := range []string{"// The theme I like.", "/* keep */", "// mine", "// a server I turned off", `/* "mcp": 1 */`} {
				if strings.Contains(tc.before, c) && !strings.Contains(string(mid), c) {
					t.Errorf("comment %s lost:\n%s", c, mid)
				}
			}
			if tc.before != "" {
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
					t.Errorf("mode %v, want the file's own 0644", fi.Mode().Perm())
				}
			}
			// Again: nothing more to add.
			if again, _, err := Exclude(path, tc.names); err != nil || len(again) != 0 {
				t.Errorf("second Exclude added %v, %v", again, err)
			}
			removed, err := Include(path, added, created)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(removed, added) {
				t.Errorf("removed %v, want %v", removed, added)
			}
			after, err := os.ReadFile(path)
			if tc.before == "" && !os.IsNotExist(err) {
				t.Errorf("after the round trip, the file gemkit made is still there (%v):\n%s", err, after)
			} else if tc.before != "" && string(after) != tc.before {
				t.Errorf("after the round trip:\n%s\nwant:\n%s\n(between:\n%s)", after, tc.before, mid)
			}
		})
	}
}

// TestRefused: a file Gemini CLI cannot read either, or an mcp or
// mcp.excluded of another type, is refused with words naming the file
// and the line, and is left as it was.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"trailing comma", "{\n  \"a\": 1,\n}", "line 3: a key was expected (a trailing comma?)"},
		{"open comment", "{\"a\": 1 /* }", "line 1: a /* comment is not closed"},
		{"not an object", "[1]", "not a JSON object"},
		{"mcp not an object", `{"mcp": true}`, "mcp is not an object"},
		{"excluded not an array", `{"mcp": {"excluded": "memory"}}`, "mcp.excluded"},
		{"text after", `{} {}`, "text follows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			os.WriteFile(path, []byte(tc.body), 0o600)
			_, _, err := Exclude(path, []string{"memory"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("Exclude: %v, want %q with the path", err, tc.want)
			}
			if b, _ := os.ReadFile(path); string(b) != tc.body {
				t.Errorf("the file changed: %s", b)
			}
		})
	}
}

// TestServers: Read names the person's own mcpServers entries, which a
// switch must not exclude by sharing a name with them.
func TestServers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(path, []byte(`{"mcpServers": {"gemkit": {"command": "gemkit"}, "memory": {"command": "x"}}} // end`), 0o600)
	if st, err := Read(filepath.Join(t.TempDir(), "absent.json")); err != nil || len(st.Servers) != 0 {
		t.Errorf("an absent file: %+v, %v", st, err)
	}
	other := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(other, []byte(`{"mcpServers": {"gk": {"command": "/usr/local/bin/gemkit", "args": ["mcp"]}}}`), 0o600)
	if st, err := Read(other); err != nil || st.Gemkit != "gk" {
		t.Errorf("the gemkit entry: %+v, %v", st, err)
	}
	st, err := Read(path)
	if err != nil || !slices.Equal(st.Servers, []string{"gemkit", "memory"}) || st.Gemkit != "" {
		t.Errorf("Read = %+v, %v", st, err)
	}
}

// TestSymlink: a settings file that is a symlink (a dotfiles
// repository's) stays one: its target is edited, and undone.
func TestSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "gemini-settings.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	const body = "{\n  \"ui\": {\"theme\": \"GitHub\"} // mine\n}\n"
	os.WriteFile(target, []byte(body), 0o640)
	path := filepath.Join(dir, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	added, created, err := Exclude(path, []string{"memory"})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the settings file is no longer a symlink: %v", err)
	}
	if st, _ := Read(target); !slices.Equal(st.Excluded, []string{"memory"}) {
		t.Errorf("the target's mcp.excluded = %v", st.Excluded)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Errorf("the target's mode is %v, want its own 0640", fi.Mode().Perm())
	}
	if _, err := Include(path, added, created); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != body {
		t.Errorf("after the round trip the target is:\n%s", b)
	}
}
