package extension

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// writeTree creates files under dir; a value starting with "->" makes a
// symlink to the rest.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestValidateFindsEverythingAtOnce(t *testing.T) {
	dir := everythingWrong(t)
	ext, err := Load(dir)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Load: %v, want a *ValidationError", err)
	}
	if ext == nil || ext.Manifest.Name != "bad name!" {
		t.Fatalf("Load must return the parsed extension with its problems")
	}
	got := map[string]string{}
	for _, p := range ext.Problems {
		if p.Fix == "" {
			t.Errorf("%s has no fix", p.Path)
		}
		got[p.Path] += p.Message + "|"
		if want := wantEffect(p.Path); p.Effect != want {
			t.Errorf("%s: effect %q, want %q", p.Path, p.Effect, want)
		}
	}
	if stops := stopping(ext.Problems); !reflect.DeepEqual(ve.Problems, stops) {
		t.Errorf("the ValidationError holds %d problems, want the %d that stop something", len(ve.Problems), len(stops))
	}
	want := map[string]string{
		"name":                                "letters, digits and dashes",
		"version":                             "missing",
		"permissions.filesystem.write":        "wider than the read scope",
		"permissions.network.allowedHosts[1]": "path",
		"permissions.network.allowedHosts[2]": "empty",
		"permissions.network.allowedHosts[3]": "repeats allowedHosts[0]",
		"tools[1].name":                       "already the name of tools[0]",
		"tools[1].executable":                 "outside the extension folder",
		"tools[1].runtime":                    "not a runtime",
		"tools[2].executable":                 "symlink",
		"tools[2].output":                     "not an output kind",
		"tools[3].description":                "missing",
		"tools[3].executable":                 "symlink \"lib\"",
		"tools[3].args[0].type":               "not an argument type",
		"tools[3].args[1].name":               "already the name of args[0]",
		"tools[3].args[2].name":               "cannot be a command-line flag",
		"tools[4].executable":                 "does not exist",
		"tools[5].executable":                 "outside the extension folder",
		"tools[6].executable":                 "not a regular file",
		"docs[1].name":                        "already the name of docs[0]",
		"docs[1].file":                        "does not exist",
		"examples[0].tool_call":               "not one of this extension's tools",
		"examples[1].prompt":                  "missing",
		"mcpServers.bad":                      "not an object",
		"mcpServers.srv":                      "neither how to start",
		"settings[0].envVar":                  "not an environment variable name",
		"themes[0].name":                      "missing",
	}
	for path, sub := range want {
		if !strings.Contains(got[path], sub) {
			t.Errorf("%s: got %q, want a message with %q", path, got[path], sub)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("unexpected problem %s: %s", path, got[path])
		}
	}
	// Sorted naturally, so output is stable.
	paths := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		paths[i] = p.Path
	}
	if !sort.SliceIsSorted(paths, func(i, j int) bool { return naturalLess(paths[i], paths[j]) }) {
		t.Errorf("problems not sorted: %q", paths)
	}
}

// everythingWrong makes an extension folder whose manifest has one of
// each problem Validate finds, with a symlinked folder leading out of it.
func everythingWrong(t *testing.T) string {
	dir := t.TempDir()
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"evil.py": "print(1)", "lib/x.sh": "echo"})
	writeTree(t, dir, map[string]string{
		"gemini-extension.json": `{
  "name": "bad name!",
  "version": "",
  "permissions": {
    "filesystem": {"read": "workspace", "write": "home"},
    "network": {"allowedHosts": ["ok.example.com", "https://x.com/path", "", "OK.example.com"]}
  },
  "tools": [
    {"name": "a", "description": "d", "executable": "tools/a.py", "runtime": "python"},
    {"name": "a", "description": "d", "executable": "../` + filepath.Base(outside) + `/evil.py", "runtime": "ruby"},
    {"name": "link", "description": "d", "executable": "tools/link.py", "runtime": "python", "output": "xml"},
    {"name": "viadir", "description": "", "executable": "lib/x.sh", "runtime": "shell",
     "args": [{"name": "x", "type": "object"}, {"name": "x", "type": "string"}, {"name": "--bad", "type": "string"}]},
    {"name": "gone", "description": "d", "executable": "tools/missing.py", "runtime": "python"},
    {"name": "abs", "description": "d", "executable": "/etc/passwd", "runtime": "shell"},
    {"name": "folder", "description": "d", "executable": "tools", "runtime": "shell"}
  ],
  "docs": [
    {"name": "rules", "file": "docs/rules.md"},
    {"name": "rules", "file": "docs/none.md"}
  ],
  "examples": [{"prompt": "p", "tool_call": "nosuch(x=1)"}, {"prompt": "", "tool_call": "a()"}],
  "mcpServers": {"srv": {"args": ["x"]}, "bad": 3},
  "settings": [{"name": "k", "envVar": "1BAD"}],
  "themes": [{"type": "custom"}]
}`,
		"tools/a.py":    "print(1)",
		"tools/link.py": "->a.py",
		"lib":           "->" + filepath.Join(outside, "lib"),
		"docs/rules.md": "# rules",
	})
	return dir
}

// wantEffect is what a problem at path stops: what Gemini CLI refuses
// too, what stops gemkit's tools, and what stops nothing (Gemini CLI's
// fields it takes as they are).
func wantEffect(path string) Effect {
	switch head, _, _ := strings.Cut(path, "."); {
	case path == "name" || path == "version":
		return EffectRefused
	case head == "permissions" || strings.HasPrefix(head, "tools[") || strings.HasPrefix(head, "docs[") || strings.HasPrefix(head, "examples["):
		return EffectTools
	}
	return EffectWarning
}

func TestValidateAcceptsExtensionPathVariable(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"gemini-extension.json": `{"name":"v","version":"1","tools":[{"name":"t","description":"d","executable":"${extensionPath}${/}tools${/}t.sh","runtime":"shell"}],
		"examples":[{"prompt":"p","tool_call":"t()"}]}`,
		"tools/t.sh": "echo",
	})
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got, want := ext.Manifest.Tools[0].Executable, filepath.Join(real, "tools", "t.sh"); got != want {
		t.Errorf("executable = %q, want %q", got, want)
	}
}

func TestLoadThroughSymlinkUsesRealPath(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real-ext")
	writeTree(t, real, map[string]string{
		"gemini-extension.json": `{"name":"s","version":"1","mcpServers":{"s":{"command":"node","args":["${extensionPath}/server.js"]}}}`,
	})
	link := filepath.Join(base, "link-ext")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	ext, err := Load(link)
	if err != nil {
		t.Fatal(err)
	}
	realResolved, _ := filepath.EvalSymlinks(real)
	if ext.Dir != realResolved {
		t.Errorf("Dir = %s, want the real path %s", ext.Dir, realResolved)
	}
	if s := MCPServerSummary(ext.Manifest.MCPServers["s"]); !strings.Contains(s, realResolved+"/server.js") {
		t.Errorf("${extensionPath} = %s, want the real path", s)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing folder: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), ManifestFile) {
		t.Errorf("no manifest: %v", err)
	}
	writeTree(t, dir, map[string]string{ManifestFile: "{\n\"name\": \"x\",,\n}"})
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("syntax error: %v", err)
	}
}

func TestCompatibilityManifestsLoadUnchanged(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/compat/*")
	if len(dirs) < 8 {
		t.Fatalf("want the whole compatibility set, found %d", len(dirs))
	}
	for _, dir := range dirs {
		ext, err := Load(dir)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		// Nothing read is lost: the manifest written back means the same
		// as the file (apart from substituted variables).
		out, err := ext.Unexpanded().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !jsonSame(t, out, ext.Raw) {
			t.Errorf("%s: manifest changed on the way through:\n%s", dir, out)
		}
	}
	ext, _ := Load("testdata/compat/context-list")
	var names []string
	for _, f := range ext.ContextFiles {
		names = append(names, filepath.Base(f))
	}
	if !reflect.DeepEqual(names, []string{"GEMINI.md", "style.md"}) {
		t.Errorf("context files = %v; want the existing ones only", names)
	}
}

// TestDescriptionBound: a tool's description, and an argument's, of more
// than MaxDescription characters is a problem naming the tool and the
// bound; at the bound, counted in characters not bytes, it is not. Load
// (link, install, every start) refuses what Validate does.
func TestDescriptionBound(t *testing.T) {
	long := strings.Repeat("d", MaxDescription+1)
	for _, c := range []struct {
		name    string
		tool    string // the description of the tool
		arg     string // and of its argument
		path    string // the problem's path, "" for none
		message string
	}{
		{"at the bound", strings.Repeat("d", MaxDescription), "", "", ""},
		{"at the bound, in characters of 3 bytes", strings.Repeat("€", MaxDescription), strings.Repeat("€", MaxDescription), "", ""},
		{"one past", long, "", "tools[0].description",
			`of the tool "lint" is 8193 characters long, more than the 8192 a tool's description may have`},
		{"100,000", strings.Repeat("d", 100000), "", "tools[0].description",
			`of the tool "lint" is 100000 characters long, more than the 8192`},
		{"an argument's", "d", long, "tools[0].args[0].description",
			`of the argument "file" of the tool "lint" is 8193 characters long, more than the 8192`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			m, _ := json.Marshal(map[string]any{"name": "v", "version": "1", "tools": []any{map[string]any{
				"name": "lint", "description": c.tool, "executable": "tools/lint.sh", "runtime": "shell",
				"args": []any{map[string]any{"name": "file", "type": "string", "description": c.arg}},
			}}})
			writeTree(t, dir, map[string]string{"gemini-extension.json": string(m), "tools/lint.sh": "echo"})
			_, err := Load(dir)
			var ve *ValidationError
			if c.path == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("Load: %v, want one problem", err)
			}
			p := ve.Problems[0]
			if p.Path != c.path || !strings.HasPrefix(p.Message, c.message) || !strings.Contains(p.Fix, "docs[]") {
				t.Errorf("problem %+v, want at %s: %q", p, c.path, c.message)
			}
		})
	}
}

// planCases are plan settings by name, and whether Gemini CLI 0.61
// drops them (ExtensionManager._buildExtension): a truthy
// plan.directory that is not a string, is absolute for POSIX or
// Windows, or holds ".." anywhere.
var planCases = []struct {
	name, plan string
	dropped    bool
}{
	{"relative", `{"directory": "plans"}`, false},
	{"nested", `{"directory": "docs/plans"}`, false},
	{"dots-in-name", `{"directory": "plans..old"}`, true},
	{"parent", `{"directory": "../plans"}`, true},
	{"inner-parent", `{"directory": "a/../b"}`, true},
	{"absolute", `{"directory": "/tmp/plans"}`, true},
	{"backslash", `{"directory": "\\plans"}`, true},
	{"drive", `{"directory": "C:\\plans"}`, true},
	{"drive-slash", `{"directory": "c:/plans"}`, true},
	{"drive-only", `{"directory": "C:plans"}`, false},
	{"number", `{"directory": 5}`, true},
	{"zero", `{"directory": 0}`, false},
	{"tiny", `{"directory": 1e-400}`, false},
	{"true", `{"directory": true}`, true},
	{"object", `{"directory": {}}`, true},
	{"empty", `{"directory": ""}`, false},
	{"null", `{"directory": null}`, false},
	{"last-wins", `{"directory": "/abs", "directory": "plans"}`, false},
	{"last-wins-bad", `{"directory": "plans", "directory": "../x"}`, true},
	{"case", `{"Directory": "/abs"}`, false},
	{"string-plan", `"../x"`, false},
}

// TestValidatePlanDirectory: validate flags the plan.directory Gemini
// CLI drops, and only it (TestPlanDirectoryAsGeminiCLI holds the table
// to Gemini CLI itself).
func TestValidatePlanDirectory(t *testing.T) {
	for _, tc := range planCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"gemini-extension.json": `{"name": "p", "version": "1.0.0", "plan": ` + tc.plan + `}`})
			m, _, err := ParseManifest([]byte(`{"name": "p", "version": "1.0.0", "plan": ` + tc.plan + `}`))
			if err != nil {
				t.Fatal(err)
			}
			var flagged []string
			for _, p := range Validate(dir, m) {
				if p.Path == "plan.directory" {
					flagged = append(flagged, p.String())
				}
			}
			if got := len(flagged) > 0; got != tc.dropped {
				t.Errorf("flagged %v, want %v", flagged, tc.dropped)
			}
		})
	}
}

// TestPlanDirectoryAsGeminiCLI holds planCases to Gemini CLI 0.61: it
// loads one extension per case and warns "Invalid plan.directory" for
// exactly the plans it drops.
func TestPlanDirectoryAsGeminiCLI(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	home, ws := t.TempDir(), t.TempDir()
	writeTree(t, home, map[string]string{".gemini/settings.json": `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
		"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}, "privacy": {"usageStatisticsEnabled": false}}`})
	for _, tc := range planCases {
		writeTree(t, home, map[string]string{".gemini/extensions/p-" + tc.name + "/gemini-extension.json": `{"name": "p-` + tc.name + `", "version": "1.0.0", "plan": ` + tc.plan + `}`})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"), "extensions", "list")
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + home, "GEMINI_CLI_HOME=" + home, "GEMINI_API_KEY=x", "PATH=" + os.Getenv("PATH"), "NO_COLOR=1", "GEMINI_CLI_NO_RELAUNCH=true"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini extensions list: %v\n%s", err, out)
	}
	for _, tc := range planCases {
		warned := strings.Contains(string(out), `Invalid plan.directory in extension "p-`+tc.name+`"`)
		if warned != tc.dropped {
			t.Errorf("%s: Gemini CLI drops the plan %v, the table says %v", tc.name, warned, tc.dropped)
		}
	}
	if t.Failed() {
		t.Logf("gemini extensions list:\n%s", out)
	}
}
