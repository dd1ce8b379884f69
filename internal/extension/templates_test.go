package extension

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

func TestTemplatesPassValidate(t *testing.T) {
	for _, tmpl := range Templates() {
		dir := filepath.Join(t.TempDir(), "My Ext_"+tmpl.Name)
		files, err := CreateFromTemplate(dir, tmpl.Name)
		if err != nil {
			t.Fatalf("%s: %v", tmpl.Name, err)
		}
		if len(files) == 0 {
			t.Fatalf("%s wrote nothing", tmpl.Name)
		}
		ext, err := Load(dir)
		if err != nil {
			t.Errorf("template %s does not validate: %v", tmpl.Name, err)
			continue
		}
		if want := "my-ext-" + tmpl.Name; ext.Manifest.Name != want {
			t.Errorf("template %s named %q, want %q", tmpl.Name, ext.Manifest.Name, want)
		}
		if strings.Contains(string(ext.Raw), "{{name}}") {
			t.Errorf("template %s left a placeholder", tmpl.Name)
		}
		// A description that names slash commands names them as Gemini
		// CLI will (commands/review.toml is /review).
		for _, c := range ext.CustomCommands() {
			if !strings.Contains(ext.Manifest.Description, c+" ") {
				t.Errorf("template %s adds %s but its description says %q", tmpl.Name, c, ext.Manifest.Description)
			}
		}
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"x": "y"})
	if _, err := CreateFromTemplate(dir, ""); err == nil {
		t.Errorf("new into a non-empty folder must fail")
	}
	// An existing empty folder is filled, and nothing is left beside it.
	parent := t.TempDir()
	empty := filepath.Join(parent, "empty")
	must(t, os.Mkdir(empty, 0o755))
	if _, err := CreateFromTemplate(empty, "context"); err != nil {
		t.Errorf("new into an empty folder: %v", err)
	}
	if got, _ := os.ReadDir(parent); len(got) != 1 {
		t.Errorf("new left %d entries beside the extension", len(got))
	}
	if _, err := Load(empty); err != nil {
		t.Errorf("template in an existing empty folder: %v", err)
	}
	if _, err := CreateFromTemplate(filepath.Join(t.TempDir(), "n"), "nope"); err == nil || !strings.Contains(err.Error(), "python") {
		t.Errorf("unknown template: %v", err)
	}
}

// TestTemplateToolsRun runs every template tool with its real interpreter
// the way the plan passes arguments (--name value), so a template never
// ships a script that does not work.
func TestTemplateToolsRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if _, err := CreateFromTemplate(dir, "tools"); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	writeTree(t, ws, map[string]string{"notes.txt": "one two\nthree\n", "src/a.go": "// TODO: finish\n"})
	// The interpreter of each runtime and the Debian package that has it.
	interp := map[Runtime][2]string{RuntimePython: {"python3", "python3"}, RuntimeNode: {"node", "nodejs"}, RuntimeShell: {"sh", "dash"}}
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		args []string
		out  string
	}{
		"countWords": {[]string{"--file", "notes.txt"}, `{"file": "notes.txt", "lines": 2, "words": 3, "chars": 14}`},
		"slugify":    {[]string{"--text", "Hello, Wörld!"}, "hello-world"},
		"findTodos":  {[]string{"--dir", "src"}, "src/a.go:1:// TODO: finish"},
	}
	for _, tool := range ext.Manifest.Tools {
		bin := gemkittest.Tool(t, interp[tool.Runtime][0], interp[tool.Runtime][1])
		w := want[tool.Name]
		cmd := exec.Command(bin, append([]string{ext.Path(tool.Executable)}, w.args...)...)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", tool.Name, err, out)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != w.out {
			t.Errorf("%s printed %q, want %q", tool.Name, got, w.out)
		}
		if tool.Output == OutputJSON && !json.Valid(out) {
			t.Errorf("%s declares json output but printed %s", tool.Name, out)
		}
	}
}

// mcpServerDef is how a manifest starts an MCP server.
type mcpServerDef struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// mcpTemplateServer creates an extension named name from the mcp template,
// loads it and returns its server's command, ${extensionPath} resolved.
func mcpTemplateServer(t *testing.T, name string) mcpServerDef {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if _, err := CreateFromTemplate(dir, "mcp"); err != nil {
		t.Fatal(err)
	}
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var def mcpServerDef
	if err := json.Unmarshal(ext.Manifest.MCPServers[name], &def); err != nil {
		t.Fatal(err)
	}
	return def
}

// TestTemplateMCPDeclaresPermissions: the MCP template shows an author
// where a server's needs go: the manifest's permissions, which its
// servers take in gemkit's sandbox (a host to reach, workspace writes).
func TestTemplateMCPDeclaresPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "srv")
	if _, err := CreateFromTemplate(dir, "mcp"); err != nil {
		t.Fatal(err)
	}
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := ext.Manifest.Permissions
	if p == nil || p.Filesystem == nil || p.Network == nil {
		t.Fatalf("the MCP template declares no filesystem and network permissions: %s", ext.Raw)
	}
	for _, key := range []string{`"allowedHosts"`, `"write"`} {
		if !strings.Contains(string(ext.Raw), key) {
			t.Errorf("the MCP template does not show %s for its server to widen", key)
		}
	}
}

func TestTemplateMCPServerAnswers(t *testing.T) {
	gemkittest.Tool(t, "node", "nodejs")
	def := mcpTemplateServer(t, "srv")
	if _, err := os.Stat(def.Args[0]); err != nil {
		t.Fatalf("${extensionPath} did not resolve to the server script: %v", err)
	}
	cmd := exec.Command(def.Command, def.Args...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi there"}}}
`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("want 3 responses, got:\n%s", out)
	}
	var call struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(lines[2], &call); err != nil || call.ID != 3 || len(call.Result.Content) != 1 || call.Result.Content[0].Text != "hi there" {
		t.Errorf("tools/call answered %s (%v)", lines[2], err)
	}
}

// TestTemplateMCPServerWithRealSDKClient connects the official MCP SDK
// client (interop/node_modules, installed by `npm install --no-save` in CI) to the mcp
// template's server, as Gemini CLI would.
func TestTemplateMCPServerWithRealSDKClient(t *testing.T) {
	_, interop := gemkittest.Interop(t, "@modelcontextprotocol/sdk")
	def := mcpTemplateServer(t, "sdk-check")
	script := `
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
const [command, ...args] = JSON.parse(process.argv[1]);
const client = new Client({ name: 'gemkit-test', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command, args }));
const { tools } = await client.listTools();
const res = await client.callTool({ name: 'echo', arguments: { text: 'via sdk' } });
console.log(JSON.stringify({ tools: tools.map((t) => t.name), text: res.content[0].text }));
await client.close();
`
	argv, _ := json.Marshal(append([]string{def.Command}, def.Args...))
	cmd := exec.Command("node", "--input-type=module", "-e", script, string(argv))
	cmd.Dir = interop
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("SDK client: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != `{"tools":["echo"],"text":"via sdk"}` {
		t.Errorf("SDK client saw %s", got)
	}
}
