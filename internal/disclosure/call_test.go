package disclosure

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// TestMain lets this test binary serve as its own sandbox child, so the
// calls below run real sandboxed tools.
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(m.Run())
}

// TestCallWording runs real tools through Call and checks what a model
// is told for each outcome.
func TestCallWording(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	os.MkdirAll(ws, 0o755)
	writeExt(t, home, `{"name": "w", "version": "1.0.0",
	 "tools": [
	  {"name": "json", "description": "d", "executable": "tools/json.sh", "runtime": "shell", "output": "json", "args": [{"name": "n", "type": "integer"}]},
	  {"name": "move", "description": "d", "executable": "tools/quiet.sh", "runtime": "shell", "args": [{"name": "outside", "type": "string"}, {"name": "time", "type": "number"}]},
	  {"name": "notjson", "description": "d", "executable": "tools/notjson.sh", "runtime": "shell", "output": "json"},
	  {"name": "binary", "description": "d", "executable": "tools/binary.sh", "runtime": "shell"},
	  {"name": "flood", "description": "d", "executable": "tools/flood.sh", "runtime": "shell"},
	  {"name": "sleep", "description": "d", "executable": "tools/sleep.sh", "runtime": "shell"},
	  {"name": "quiet", "description": "d", "executable": "tools/quiet.sh", "runtime": "shell"}],
	 "docs": [{"name": "d", "file": "d.md"}]}`, map[string]string{
		"tools/json.sh":    `echo "{\"n\": $2}"` + "\n",
		"tools/notjson.sh": "echo hello\n",
		"tools/binary.sh":  `printf 'ok \377\376 end'` + "\n",
		"tools/flood.sh":   "head -c 5000 /dev/zero | tr '\\0' x\n",
		"tools/sleep.sh":   "sleep 30\n",
		"tools/quiet.sh":   "true\n",
		"d.md":             "doc\n",
	})
	st := extension.OpenStore(home).WithWorkspace(ws)
	set, err := Load(st)
	if err != nil {
		t.Fatal(err)
	}
	m := set.Extension("w").Ext.Manifest
	content, err := extension.ReadContent(filepath.Join(home, ".gemini", "extensions", "w"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordConsentContent("w", extension.PermissionsHash(m), content); err != nil {
		t.Fatal(err)
	}
	r := &toolrun.Runner{Consent: st, Environ: []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}}
	lim := Limits{Timeout: 2 * time.Second, MaxOutput: 1000}
	for _, c := range []struct {
		name, args string
		isError    bool
		want       []string
	}{
		{"w_json", `{"n": 3}`, false, []string{`{"n": 3}`}},
		{"w_json", `{"n": 1.5}`, true, []string{"arguments are wrong", `"n" must be a whole number`}},
		// Arguments are named as the input schema's properties, not as
		// the flags the tool is run with.
		{"w_move", `{"time": 1}`, true, []string{`missing argument "outside"; it takes "outside" (string), "time" (number)`}},
		{"w_move", `{"outside": "x", "time": 1, "times": 2}`, true, []string{`unknown argument "times";`}},
		{"w_move", `{"outside": 3, "time": 1}`, true, []string{`"outside" must be a string, got 3`}},
		{"w_json", `[1]`, true, []string{"not a JSON object"}},
		{"w_notjson", ``, true, []string{"declares JSON output but printed something else", "hello"}},
		{"w_binary", `{}`, false, []string{"ok \uFFFD end", "not valid UTF-8"}},
		{"w_flood", `{}`, true, []string{"printed more than 1000 bytes and was stopped"}},
		{"w_sleep", `{}`, true, []string{"did not finish within 2s", "killed"}},
		{"w_quiet", `null`, false, []string{"(the tool succeeded and printed nothing)"}},
		{"w_nope", `{}`, true, []string{`There is no tool "w_nope"`, "read_doc, w_binary"}},
		{"read_doc", `{"extension": "w"}`, true, []string{"read_doc needs two string arguments"}},
		{"read_doc", `{"extension": "w", "name": "d"}`, false, []string{"doc\n"}},
	} {
		res := set.Call(context.Background(), r, c.name, json.RawMessage(c.args), lim)
		if strings.Contains(res.Text, "--") {
			t.Errorf("%s %s: %q names a command-line flag", c.name, c.args, res.Text)
		}
		if res.IsError != c.isError {
			t.Errorf("%s %s: isError %v, want %v: %s", c.name, c.args, res.IsError, c.isError, res.Text)
		}
		for _, w := range c.want {
			if !strings.Contains(res.Text, w) {
				t.Errorf("%s %s: %q lacks %q", c.name, c.args, res.Text, w)
			}
		}
	}

	// A tool script changed since consent: the answer names it, for the
	// model to pass on, and says how to agree again.
	if err := os.WriteFile(filepath.Join(home, ".gemini", "extensions", "w", "tools", "quiet.sh"), []byte("true # changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := set.Call(context.Background(), r, "w_quiet", nil, lim)
	if !res.IsError || !strings.Contains(res.Text, "tools/quiet.sh (changed)") || !strings.Contains(res.Text, "gemkit extensions consent w --grant") {
		t.Errorf("changed files: %+v", res)
	}

	// Without consent on record, the answer says how to give it.
	st.ForgetConsent("w")
	res = set.Call(context.Background(), r, "w_quiet", nil, lim)
	if !res.IsError || !strings.Contains(res.Text, "gemkit extensions consent w --grant") {
		t.Errorf("no consent: %+v", res)
	}
}

// TestSchemaOfOptionalArgs: arguments the manifest makes optional are not
// in the schema's required list, and a default is the property's default.
func TestSchemaOfOptionalArgs(t *testing.T) {
	no := false
	tool := &extension.Tool{Name: "slugify", Args: []extension.Arg{
		{Name: "text", Type: extension.ArgString},
		{Name: "maxLength", Type: extension.ArgInteger, Default: []byte("40")},
		{Name: "sep", Type: extension.ArgString, Required: &no},
		{Name: "tags", Type: extension.ArgStringArray},
	}}
	got := string(SchemaJSON(InputSchema(tool)))
	want := `{"additionalProperties":false,"properties":{"maxLength":{"default":40,"type":"integer"},"sep":{"type":"string"},"tags":{"items":{"type":"string"},"type":"array"},"text":{"type":"string"}},"required":["text"],"type":"object"}`
	if got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if sig := Signature("tools-ext_slugify", tool); sig != "tools-ext_slugify(text: string, maxLength?: integer = 40, sep?: string, tags?: string[])" {
		t.Errorf("signature %s", sig)
	}
}

// TestResolve: a name that can mean one enabled tool is that tool,
// qualified or not ('-' and '_' alike); one that several tools fit is
// answered with their names; read_doc finds the extension of a doc named
// alone.
func TestResolve(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeExt(t, home, `{"name": "hello-extension", "version": "1.0.0",
	 "tools": [{"name": "sayHello", "description": "d", "executable": "t.sh", "runtime": "shell"}],
	 "docs": [{"name": "guide", "file": "g.md"}, {"name": "shared", "file": "g.md"}]}`, map[string]string{"t.sh": "echo\n", "g.md": "hello guide\n"})
	writeExt(t, home, `{"name": "a", "version": "1.0.0",
	 "tools": [{"name": "lint", "description": "d", "executable": "t.sh", "runtime": "shell"}],
	 "docs": [{"name": "shared", "file": "g.md"}]}`, map[string]string{"t.sh": "echo\n", "g.md": "a\n"})
	writeExt(t, home, `{"name": "b", "version": "1.0.0",
	 "tools": [{"name": "lint", "description": "d", "executable": "t.sh", "runtime": "shell"}]}`, map[string]string{"t.sh": "echo\n"})
	s, err := Load(extension.OpenStore(home).WithWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, tool string
		several    []string
	}{
		{"hello-extension_sayHello", "hello-extension_sayHello", nil},
		{"sayHello", "hello-extension_sayHello", nil},
		{"hello-extension.sayHello", "hello-extension_sayHello", nil},
		{"hello-extension/sayHello", "hello-extension_sayHello", nil},
		{"hello-extension:sayHello", "hello-extension_sayHello", nil},
		{"hello_extension_sayHello", "hello-extension_sayHello", nil},
		{"a_lint", "a_lint", nil},
		{"lint", "", []string{"a_lint", "b_lint"}},
		{"sayhello", "", nil},
		{"nothing", "", nil},
	} {
		got, several := s.Resolve(c.name)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != c.tool || strings.Join(several, ",") != strings.Join(c.several, ",") {
			t.Errorf("Resolve(%q) = %q %v, want %q %v", c.name, name, several, c.tool, c.several)
		}
	}
	r := &toolrun.Runner{}
	for _, c := range []struct {
		name, args string
		isError    bool
		want       string
	}{
		{"lint", `{}`, true, `"lint" could be any of these tools: a_lint, b_lint. Call the one you mean by its name.`},
		{"read_doc", `{"name": "guide"}`, false, "hello guide\n"},
		{"read_doc", `{"name": "hello-extension/guide"}`, false, "hello guide\n"},
		{"read_doc", `{"name": "shared"}`, true, `"shared" is a doc or skill of several: a, hello-extension; give the extension's name`},
		{"read_doc", `{"name": "none"}`, true, `no enabled extension has a doc or skill "none"`},
	} {
		res := s.Call(context.Background(), r, c.name, json.RawMessage(c.args), Limits{})
		if res.IsError != c.isError || !strings.Contains(res.Text, c.want) {
			t.Errorf("Call(%s, %s) = %v %q, want %v %q", c.name, c.args, res.IsError, res.Text, c.isError, c.want)
		}
	}
}
