package extension

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const planManifest = `{
  "name": "code-analyzer",
  "version": "1.0.0",
  "description": "An extension for analyzing and linting code files.",
  "permissions": {
    "filesystem": { "read": "workspace" },
    "network": { "allowedHosts": ["https://linter-rules.example.com"] }
  },
  "tools": [
    {
      "name": "lintFile",
      "description": "Lints a given file and returns a list of issues as a JSON object.",
      "executable": "tools/lint.py",
      "runtime": "python",
      "output": "json",
      "args": [
        { "name": "file", "type": "string", "description": "The path to the file to lint." }
      ]
    }
  ],
  "docs": [
    { "name": "linter-rules", "description": "A document explaining the linting rules.", "file": "docs/rules.md" }
  ],
  "examples": [
    { "prompt": "Lint the file src/index.js", "tool_call": "lintFile(file=\"src/index.js\")" }
  ]
}`

func TestParseManifestPlanFields(t *testing.T) {
	m, probs, err := ParseManifest([]byte(planManifest))
	if err != nil || len(probs) > 0 {
		t.Fatalf("ParseManifest: %v %v", err, probs)
	}
	want := &Manifest{
		Name: "code-analyzer", Version: "1.0.0",
		Description: "An extension for analyzing and linting code files.",
		Permissions: &Permissions{
			Filesystem: &FilesystemPermissions{Read: AccessWorkspace},
			Network:    &NetworkPermissions{AllowedHosts: []string{"https://linter-rules.example.com"}},
		},
		Tools: []Tool{{
			Name: "lintFile", Description: "Lints a given file and returns a list of issues as a JSON object.",
			Executable: "tools/lint.py", Runtime: RuntimePython, Output: OutputJSON,
			Args: []Arg{{Name: "file", Type: ArgString, Description: "The path to the file to lint."}},
		}},
		Docs:     []Doc{{Name: "linter-rules", Description: "A document explaining the linting rules.", File: "docs/rules.md"}},
		Examples: []Example{{Prompt: "Lint the file src/index.js", ToolCall: `lintFile(file="src/index.js")`}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got  %+v\nwant %+v", m, want)
	}
}

func TestContextFileNameShapes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"name":"a","version":"1","contextFileName":"CTX.md"}`, []string{"CTX.md"}},
		{`{"name":"a","version":"1","contextFileName":["A.md","b/B.md"]}`, []string{"A.md", "b/B.md"}},
		{`{"name":"a","version":"1"}`, []string{"GEMINI.md"}},
	} {
		m, probs, err := ParseManifest([]byte(tc.in))
		if err != nil || len(probs) > 0 {
			t.Fatalf("%s: %v %v", tc.in, err, probs)
		}
		if got := m.ContextFiles(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ContextFiles = %v, want %v", tc.in, got, tc.want)
		}
		// Written back in the shape it came in.
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonSame(t, out, []byte(tc.in)) {
			t.Errorf("round trip of %s gave %s", tc.in, out)
		}
	}
}

// jsonSame compares two JSON documents by meaning.
func jsonSame(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func TestManifestRoundTripKeepsEverything(t *testing.T) {
	dirs, err := filepath.Glob("testdata/compat/*/" + ManifestFile)
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no compat manifests: %v", err)
	}
	for _, path := range append(dirs, "") {
		var data []byte
		if path == "" {
			data = []byte(planManifest)
		} else if data, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		var m Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatalf("%s: marshal: %v", path, err)
		}
		if !jsonSame(t, out, data) {
			t.Errorf("%s: round trip changed the manifest:\n%s", path, out)
		}
	}
}

func TestUnknownFieldsKeptVerbatim(t *testing.T) {
	in := `{"name":"p","version":"1","x-num":2.50,"x-obj":{"b":1,"a":[true,null]}}`
	m, probs, err := ParseManifest([]byte(in))
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	if got := string(m.Extra["x-num"]); got != "2.50" {
		t.Errorf("x-num kept as %q, want 2.50 verbatim", got)
	}
	out, _ := json.Marshal(m)
	if !strings.Contains(string(out), `"x-num":2.50`) || !strings.Contains(string(out), `"x-obj":{"b":1,"a":[true,null]}`) {
		t.Errorf("marshal lost unknown fields: %s", out)
	}
}

func TestParseManifestCollectsTypeErrors(t *testing.T) {
	in := `{
  "name": 5,
  "version": "1",
  "permissions": {"filesystem": {"read": 1}},
  "tools": [
    {"name": "ok", "description": "d", "executable": "x", "runtime": "shell"},
    {"name": ["bad"]},
    {"name": "t", "args": [{"name": "a", "type": "string"}, {"name": 7}]}
  ],
  "docs": "nope",
  "contextFileName": 3,
  "excludeTools": [1]
}`
	_, probs, err := ParseManifest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range probs {
		paths = append(paths, p.Path)
		if p.Message == "" || p.Fix == "" {
			t.Errorf("problem without message or fix: %+v", p)
		}
	}
	want := []string{"contextFileName", "docs", "excludeTools", "name", "permissions.filesystem.read", "tools[1].name", "tools[2].args[1].name"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("problem paths = %q\nwant %q", paths, want)
	}
	// The words are JSON's, never Go's.
	for _, p := range probs {
		if strings.Contains(p.Message+p.Fix, "extension.") || strings.Contains(p.Message+p.Fix, "Go value") || strings.Contains(p.Message+p.Fix, "[]") {
			t.Errorf("%s: message in Go's words: %q / %q", p.Path, p.Message, p.Fix)
		}
	}
	byPath := map[string]Problem{}
	for _, p := range probs {
		byPath[p.Path] = p
	}
	if p := byPath["permissions.filesystem.read"]; p.Message != "is a JSON number, not a string" || p.Fix != "make permissions.filesystem.read a string" {
		t.Errorf("permissions.filesystem.read: %+v", p)
	}
	if p := byPath["tools[1].name"]; p.Message != "is a JSON list, not a string" {
		t.Errorf("tools[1].name: %+v", p)
	}
	if p := byPath["name"]; p.Message != "is a JSON number, not a string" {
		t.Errorf("name: %+v", p)
	}
}

// TestLoadDoesNotRepeatTypeProblems checks that a value of the wrong type
// is reported once, not again as missing by the rules.
func TestLoadDoesNotRepeatTypeProblems(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"name": 5, "version": ["1"]}`), 0o644)
	ext, err := Load(dir)
	var ve *ValidationError
	if !errors.As(err, &ve) || !ve.Refuses() {
		t.Fatalf("err = %v, want the name refused", err)
	}
	// A name that is not a string is refused (Gemini CLI names the
	// folder by it); a version that is a truthy list is Gemini CLI's
	// to take, and a warning here.
	probs := ext.Problems
	if len(probs) != 2 || probs[0].Path != "name" || probs[0].Effect != EffectRefused || probs[1].Path != "version" || probs[1].Effect != EffectWarning {
		t.Errorf("problems = %+v, want one for name (refused) and one for version (a warning)", probs)
	}
}

func TestParseManifestSyntaxError(t *testing.T) {
	_, _, err := ParseManifest([]byte("{\n  \"name\": \"a\",\n  \"version\": 1.0.0\n}"))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("err = %v, want one naming line 3", err)
	}
	for _, in := range []string{"null", "[1]", `"s"`, "", " \n"} {
		_, _, err := ParseManifest([]byte(in))
		if err == nil {
			t.Errorf("ParseManifest(%q) succeeded, want an error", in)
			continue
		}
		if strings.Count(err.Error(), "not valid JSON") > 1 || strings.Contains(err.Error(), "unexpected end") {
			t.Errorf("ParseManifest(%q): %v", in, err)
		}
	}
	// Load names the file once and says "not valid JSON" once.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{\n  \"name\": \"a\",,\n}"), 0o644)
	_, err = Load(dir)
	if err == nil || strings.Count(err.Error(), "not valid JSON") != 1 || !strings.Contains(err.Error(), "line 2, column 16") {
		t.Errorf("Load of a broken manifest: %v", err)
	}
}

func TestEffectivePermissionsDefaults(t *testing.T) {
	m := &Manifest{Name: "a", Version: "1"}
	p := m.EffectivePermissions()
	if p.Filesystem.Read != AccessNone || p.Filesystem.Write != AccessNone || len(p.Network.AllowedHosts) != 0 {
		t.Errorf("defaults = %+v %+v", p.Filesystem, p.Network)
	}
}

func TestFieldNamesAreCaseSensitive(t *testing.T) {
	m, probs, err := ParseManifest([]byte(`{"name":"a","version":"1","Tools":[{"name":"x"}],"NAME":"b"}`))
	if err != nil || len(probs) > 0 {
		t.Fatal(err, probs)
	}
	if m.Name != "a" || len(m.Tools) != 0 || len(m.Extra) != 2 {
		t.Errorf("case variants must stay unknown fields: name %q tools %v extra %v", m.Name, m.Tools, m.Extra)
	}
}

// FuzzParseFastMatchesSlow checks that the one-decode fast path reads
// every manifest it accepts exactly as the field-by-field path does.
func FuzzParseFastMatchesSlow(f *testing.F) {
	for _, seed := range []string{
		planManifest,
		`{"name":"a","version":"1","contextFileName":"X.md","x-y":{"z":[1]}}`,
		`{"name":"a","contextFileName":["A.md","B.md"],"plan":{"directory":"p"},"mcpServers":{"s":{"command":"c"}}}`,
		`{"Name":"case","version":"1"}`,
		`{"tools":[{"name":"t","args":[{"name":"a","type":"string"}]}],"settings":[{"name":"s","envVar":"E"}]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		fast, _, ok := parseFast([]byte(doc), false)
		if !ok {
			return
		}
		slow, probs, err := parseSlow([]byte(doc))
		if err != nil || len(probs) > 0 {
			t.Fatalf("%q: fast path accepted what the slow path rejects: %v %v", doc, err, probs)
		}
		a, errA := json.Marshal(fast)
		b, errB := json.Marshal(slow)
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Fatalf("%q:\nfast %s (%v)\nslow %s (%v)", doc, a, errA, b, errB)
		}
	})
}
