package disclosure

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// writeExt writes an extension folder into home's extensions folder, as a
// copy made by hand (no install metadata), with files relative to it.
func writeExt(t testing.TB, home, manifest string, files map[string]string) {
	t.Helper()
	var m struct{ Name string }
	if err := json.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".gemini", "extensions", m.Name)
	files["gemini-extension.json"] = manifest
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "tools/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadNamesAndDocs(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeExt(t, home, `{"name": "code-analyzer", "version": "1.0.0", "description": "Lints code.",
	 "tools": [{"name": "lintFile", "description": "Lint one file.", "executable": "tools/lint.sh", "runtime": "shell",
	   "args": [{"name": "file", "type": "string", "description": "the file"}, {"name": "fix", "type": "boolean"}]}],
	 "docs": [{"name": "linter-rules", "description": "The rules.", "file": "docs/rules.md"}],
	 "examples": [{"prompt": "lint main.go", "tool_call": "lintFile(file: \"main.go\")"}]}`,
		map[string]string{"tools/lint.sh": "echo ok\n", "docs/rules.md": "# Rules\nNo tabs.\n"})
	writeExt(t, home, `{"name": "other", "version": "1.0.0", "excludeTools": ["code-analyzer_nothing"],
	 "tools": [{"name": "read_doc", "description": "x", "executable": "tools/x.sh", "runtime": "shell"}]}`,
		map[string]string{"tools/x.sh": "echo x\n"})
	s, err := Load(extension.OpenStore(home).WithWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Extensions) != 2 || len(s.Tools()) != 2 {
		t.Fatalf("extensions %d, tools %+v", len(s.Extensions), s.Tools())
	}
	tl := s.ToolFor("code-analyzer", "lintFile")
	if tl == nil || tl.Name != "code-analyzer_lintFile" || !strings.Contains(tl.Description, `lint main.go -> code-analyzer_lintFile(file: "main.go")`) {
		t.Fatalf("tool %+v", tl)
	}
	d, err := s.ReadDoc("code-analyzer", "linter-rules")
	if err != nil || d.Text != "# Rules\nNo tabs.\n" || d.MIMEType != "text/markdown" {
		t.Fatalf("doc %+v, %v", d, err)
	}
	if _, err := s.ReadDoc("code-analyzer", "nope"); err == nil || !strings.Contains(err.Error(), "its docs: linter-rules") {
		t.Fatalf("missing doc: %v", err)
	}
	sum := s.Summary(0)
	if !strings.Contains(sum.Text, "`code-analyzer_lintFile(file: string, fix?: boolean)`: Lint one file.") || sum.Omitted != nil {
		t.Fatalf("summary:\n%s", sum.Text)
	}
}

// TestExcludeLongNames: an excludeTools entry names a tool by its exposed
// name, or by the whole name before the name limit cut it (what earlier
// limits exposed), so an entry written then still hides the tool.
func TestExcludeLongNames(t *testing.T) {
	long := "a-rather-long-extension-name-for-tests"
	tool := "summarizeEverything"
	for _, c := range []struct {
		entry  string
		hidden bool
	}{
		{ExposedName(long, tool), true},
		{long + "_" + tool, true},
		{long + "_other", false},
	} {
		home, ws := t.TempDir(), t.TempDir()
		writeExt(t, home, `{"name": "`+long+`", "version": "1.0.0",
		 "tools": [{"name": "`+tool+`", "description": "d", "executable": "t.sh", "runtime": "shell"}]}`,
			map[string]string{"t.sh": "echo\n"})
		writeExt(t, home, `{"name": "hider", "version": "1.0.0", "excludeTools": ["`+c.entry+`"]}`, map[string]string{})
		s, err := Load(extension.OpenStore(home).WithWorkspace(ws))
		if err != nil {
			t.Fatal(err)
		}
		if hidden := s.ToolFor(long, tool) == nil; hidden != c.hidden {
			t.Errorf("excludeTools %q: hidden %v, want %v (exposed name %s)", c.entry, hidden, c.hidden, ExposedName(long, tool))
		}
	}
}

// TestMayNameServerTool: every name ServerToolNamer gives a tool of an
// extension's server maps back to that extension, the plain form and
// the collision form cut short alike, and to no other extension.
func TestMayNameServerTool(t *testing.T) {
	s := &Set{}
	long := strings.Repeat("w", 45) // its names are cut to the hashed form
	for _, c := range []struct {
		ext, server, tool string
	}{
		{"weather", "api", "forecast"},
		{"weather", "api", strings.Repeat("t", 60)},
		{"3d-print", "api", "slice"},
		{long, "api", "forecast"},
	} {
		name, refused := s.ServerToolNamer()(c.ext, c.server, c.tool)
		if refused != nil {
			t.Fatalf("%+v refused: %v", c, refused)
		}
		if !s.MayNameServerTool(name, c.ext) {
			t.Errorf("%s (%+v) does not map back to %s", name, c, c.ext)
		}
		for _, other := range []string{"weather-x", "weathe", "news", "3d", long + "x", "w"} {
			if other != c.ext && s.MayNameServerTool(name, other) && !strings.HasPrefix(other, name[:DefaultNameLimit-9]) {
				t.Errorf("%s maps to %s too", name, other)
			}
		}
	}
	for _, c := range []struct {
		name, ext string
		want      bool
	}{
		{"weather_forecast", "weather", true},
		{"weather-x_forecast", "weather", false},
		{"weatherforecast", "weather", false},
		{"read_doc", "weather", false},
	} {
		if got := s.MayNameServerTool(c.name, c.ext); got != c.want {
			t.Errorf("MayNameServerTool(%q, %q) = %v, want %v", c.name, c.ext, got, c.want)
		}
	}
}

// TestLoadKeepsWhatGeminiCLIInstalls: an extension whose manifest has a
// key nobody reads (google-maps-platform's "theme") is in the set as any
// other; one whose problems are in its gemkit tools is in the set
// without them (its servers are Gemini CLI's, and served), with why;
// one Gemini CLI refuses too is left out.
func TestLoadKeepsWhatGeminiCLIInstalls(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeExt(t, home, `{"name": "themed", "version": "1.0.0", "theme": "t.json",
	 "mcpServers": {"remote": {"httpUrl": "https://mcp.example.com/mcp"}}}`, map[string]string{})
	writeExt(t, home, `{"name": "bad-tools", "version": "1.0.0",
	 "tools": [{"name": "t", "description": "d", "executable": "missing.sh", "runtime": "perl"}],
	 "docs": [{"name": "d", "file": "d.md"}],
	 "mcpServers": {"remote": {"httpUrl": "https://mcp.example.com/mcp"}}}`, map[string]string{"d.md": "doc\n"})
	writeExt(t, home, `{"name": "refused", "version": "", "mcpServers": {"remote": {"httpUrl": "https://mcp.example.com/mcp"}}}`, map[string]string{})
	s, err := Load(extension.OpenStore(home).WithWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range s.Extensions {
		names = append(names, e.Name)
	}
	if strings.Join(names, " ") != "bad-tools themed" {
		t.Fatalf("the set holds %v, want bad-tools and themed", names)
	}
	if bad := s.Extension("bad-tools"); len(bad.Ext.Manifest.Tools) != 0 || len(bad.Ext.Manifest.Docs) != 0 || len(bad.Ext.Manifest.MCPServers) != 1 || len(s.Tools()) != 0 {
		t.Errorf("bad-tools: tools %d, docs %d, servers %d; the set's tools %d", len(bad.Ext.Manifest.Tools), len(bad.Ext.Manifest.Docs), len(bad.Ext.Manifest.MCPServers), len(s.Tools()))
	}
	skipped := map[string]string{}
	for _, sk := range s.Skipped {
		skipped[sk.Name] = sk.Reason
	}
	if _, ok := skipped["themed"]; ok || len(skipped) != 2 ||
		!strings.Contains(skipped["bad-tools"], "its own tools and docs are not offered") ||
		!strings.Contains(skipped["refused"], "that Gemini CLI refuses too") {
		t.Errorf("skipped: %q", skipped)
	}
}
