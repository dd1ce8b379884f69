package qwenplugins

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// qwen is the real Qwen Code in a home of its own (HOME; its settings in
// HOME/.qwen), run in a folder under it (where `qwen extensions disable`,
// which disables for the folders under HOME, reaches), with a scripted
// model on loopback.
type qwen struct {
	t                  *testing.T
	node, cli          string
	home, cwd, markers string
	env                []string
}

func newQwen(t *testing.T) *qwen {
	t.Helper()
	node, cli := gemkittest.QwenCode(t)
	dir := t.TempDir()
	q := &qwen{t: t, node: node, cli: cli, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "home", "work"), markers: filepath.Join(dir, "markers")}
	for _, d := range []string{q.cwd, q.markers} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gemkittest.WriteQwenSettings(t, q.settingsDir())
	// No turn is scripted: each session gets fakemodel.Exhausted as its
	// answer, which is all a session here needs.
	model, err := fakemodel.StartOpenAI()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	q.env = append([]string{"HOME=" + q.home, "PATH=" + os.Getenv("PATH"), "NO_COLOR=1"}, gemkittest.QwenModelEnv(model.URL)...)
	return q
}

func (q *qwen) settingsDir() string { return filepath.Join(q.home, ".qwen") }

// set sets the top-level settings keys of kv in Qwen Code's user
// settings, keeping the others.
func (q *qwen) set(kv map[string]any) {
	q.t.Helper()
	p := filepath.Join(q.settingsDir(), "settings.json")
	b, err := os.ReadFile(p)
	if err != nil {
		q.t.Fatal(err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		q.t.Fatal(err)
	}
	for k, v := range kv {
		m[k] = v
	}
	if b, err = json.Marshal(m); err != nil {
		q.t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		q.t.Fatal(err)
	}
}

// run runs qwen with args and returns its output, failing on an error.
// It clears the markers first: what ran says what this run started.
func (q *qwen) run(args ...string) string {
	q.t.Helper()
	if err := os.RemoveAll(q.markers); err != nil {
		q.t.Fatal(err)
	}
	if err := os.MkdirAll(q.markers, 0o755); err != nil {
		q.t.Fatal(err)
	}
	cmd := exec.Command(q.node, append([]string{q.cli}, args...)...)
	cmd.Dir, cmd.Env = q.cwd, q.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		q.t.Fatalf("qwen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ran reports whether the part that writes marker name ran in the last
// run.
func (q *qwen) ran(name string) bool {
	_, err := os.Stat(filepath.Join(q.markers, name))
	return err == nil
}

// markerServer is a stdio MCP server that first touches the file named
// by its argument, so a test can tell it was started, then answers
// initialize, tools/list (one tool, ping) and tools/call.
const markerServer = `const fs = require('fs');
fs.writeFileSync(process.argv[2], String(process.pid));
require('readline').createInterface({input: process.stdin}).on('line', l => {
  let m; try { m = JSON.parse(l) } catch { return }
  if (m.id === undefined) return;
  let r = {content: [{type: 'text', text: 'pong'}]};
  if (m.method === 'initialize') r = {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'marker', version: '1'}};
  else if (m.method === 'tools/list') r = {tools: [{name: 'ping', description: 'ping', inputSchema: {type: 'object'}}]};
  process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, result: r}) + '\n');
});
`

// writePlugin writes the Claude Code plugin pq into a directory
// marketplace at mkt (mkt/pq) and returns the plugin's folder. It has two
// MCP servers in .mcp.json, srv and keep, each touching markers/NAME when
// started (keep is the witness: where it started and srv did not, Qwen
// Code's pass over the servers ran and skipped srv), and a SessionStart
// hook in hooks/hooks.json, the command hookCommand, touching
// markers/hook.
func writePlugin(t *testing.T, mkt, markers string) string {
	t.Helper()
	servers := map[string]any{}
	for _, name := range []string{"srv", "keep"} {
		servers[name] = map[string]any{"command": "node", "args": []string{"${CLAUDE_PLUGIN_ROOT}/marker.cjs", filepath.Join(markers, name)}}
	}
	mcp, _ := json.Marshal(map[string]any{"mcpServers": servers})
	hook, _ := json.Marshal(map[string]any{"hooks": map[string]any{"SessionStart": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "command", "command": hookCommand(markers)}}}}}})
	for name, body := range map[string]string{
		".claude-plugin/marketplace.json": `{"name":"localmk","owner":{"name":"t"},"plugins":[{"name":"pq","source":"./pq"}]}`,
		"pq/.claude-plugin/plugin.json":   `{"name":"pq","version":"1.0.0"}`,
		"pq/.mcp.json":                    string(mcp),
		"pq/hooks/hooks.json":             string(hook),
		"pq/marker.cjs":                   markerServer,
	} {
		gemkittest.WriteFile(t, filepath.Join(mkt, filepath.FromSlash(name)), body)
	}
	return filepath.Join(mkt, "pq")
}

// hookCommand is the plugin's SessionStart hook.
func hookCommand(markers string) string { return "touch " + filepath.Join(markers, "hook") }

// installed is a Qwen Code with the plugin pq installed as it installs
// a Claude Code plugin from a folder (`qwen extensions install DIR`).
func installed(t *testing.T) *qwen {
	t.Helper()
	q := newQwen(t)
	q.run("extensions", "install", writePlugin(t, filepath.Join(q.home, "mkt"), q.markers), "--consent")
	return q
}

// TestQwenConvertsClaudePlugin pins how Qwen Code 0.24.4 converts a
// Claude Code plugin into an extension of its own
// (packages/core/src/extension/claude-converter.ts): a copy in
// ~/.qwen/extensions/NAME with a qwen-extension.json it writes, the
// servers of .mcp.json under their own keys, as the plugin wrote them
// (${CLAUDE_PLUGIN_ROOT} is expanded at each load to the copy:
// ExtensionManager.loadExtensionManifest), the hooks left in the copy's
// hooks/hooks.json, read at each load; and from a marketplace
// (`qwen extensions install MKT:PLUGIN`, convertClaudePluginPackage)
// without the servers of .mcp.json, which only the folder install reads
// (convertClaudePluginStandalone). `qwen mcp list` names a server by its
// bare key.
func TestQwenConvertsClaudePlugin(t *testing.T) {
	q := installed(t)
	ext := filepath.Join(q.settingsDir(), "extensions", "pq")
	var conf struct {
		Name       string                     `json:"name"`
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
		Hooks      json.RawMessage            `json:"hooks"`
	}
	readJSON(t, filepath.Join(ext, "qwen-extension.json"), &conf)
	if conf.Name != "pq" || len(conf.MCPServers) != 2 || !strings.Contains(string(conf.MCPServers["srv"]), "${CLAUDE_PLUGIN_ROOT}/marker.cjs") || conf.Hooks != nil {
		t.Errorf("qwen-extension.json of the folder install: %+v", conf)
	}
	var meta struct{ OriginSource string }
	readJSON(t, filepath.Join(ext, ".qwen-extension-install.json"), &meta)
	if meta.OriginSource != "Claude" {
		t.Errorf("install metadata: originSource %q, want Claude", meta.OriginSource)
	}
	if _, err := os.Stat(filepath.Join(ext, "hooks", "hooks.json")); err != nil {
		t.Errorf("the copy has no hooks/hooks.json: %v", err)
	}
	list := q.run("mcp", "list")
	if !strings.Contains(list, " srv: node "+filepath.Join(ext, "marker.cjs")) {
		t.Errorf("qwen mcp list does not name the server by its bare key srv, run from the copy:\n%s", list)
	}

	q.run("extensions", "uninstall", "pq")
	q.run("extensions", "install", filepath.Join(q.home, "mkt")+":pq", "--consent")
	conf.MCPServers = nil
	readJSON(t, filepath.Join(ext, "qwen-extension.json"), &conf)
	if conf.Name != "pq" || conf.MCPServers != nil {
		t.Errorf("qwen-extension.json of the marketplace install: %+v (Qwen Code 0.24.4 dropped .mcp.json's servers)", conf)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestQwenExcludedStopsOnlySessions pins why mcp.excluded alone cannot
// switch a converted plugin's server: a session honours it (Config.
// isMcpServerDisabled in packages/core/src/config/config.ts, asked by
// McpClientManager before it starts a server), but `qwen mcp list`
// starts every server of every active extension to show its state,
// mcp.excluded or not (getMcpServersFromConfig and testMCPConnection in
// packages/cli/src/commands/mcp/list.ts), with the person's rights; and
// the launch flag --allowed-mcp-server-names sets mcp.excluded aside
// (packages/cli/src/config/config.ts). A server of the person's own
// settings under the same key takes the plugin's place in both (getMergedMcpServers, getMcpServersFromConfig:
// the first of a key wins, the settings' before the extensions').
func TestQwenExcludedStopsOnlySessions(t *testing.T) {
	q := installed(t)
	q.run("-p", "hi")
	if !q.ran("srv") || !q.ran("keep") {
		t.Fatal("control: a session did not start the plugin's servers")
	}
	q.set(map[string]any{"mcp": map[string]any{"excluded": []string{"srv"}}})
	q.run("-p", "hi")
	if srv, keep := q.ran("srv"), q.ran("keep"); srv || !keep {
		t.Errorf("with mcp.excluded [srv], a session started srv %v, keep %v; want srv not, keep yes", srv, keep)
	}
	q.run("mcp", "list")
	if !q.ran("srv") {
		t.Errorf("qwen mcp list no longer starts a server mcp.excluded names: a Qwen Code host for the switch may now exclude by name alone")
	}

	q.run("-p", "hi", "--allowed-mcp-server-names", "srv")
	if !q.ran("srv") {
		t.Errorf("--allowed-mcp-server-names no longer sets mcp.excluded aside")
	}

	shadow := map[string]any{"command": "node", "args": []string{filepath.Join(q.home, "mkt", "pq", "marker.cjs"), filepath.Join(q.markers, "shadow")}}
	q.set(map[string]any{"mcp": map[string]any{}, "mcpServers": map[string]any{"srv": shadow}})
	for _, args := range [][]string{{"-p", "hi"}, {"mcp", "list"}} {
		q.run(args...)
		if srv, sh := q.ran("srv"), q.ran("shadow"); srv || !sh {
			t.Errorf("a settings server under the plugin's key: qwen %s started the plugin's %v, the settings' %v; want only the settings'", args[0], srv, sh)
		}
	}
}

// TestQwenHooksGoOnlyWhole pins why the switch cannot take a converted
// plugin's hooks from Qwen Code 0.24.4 one by one: it has no setting
// that turns one hook off. HookRegistry.processHookDefinition
// (packages/core/src/hooks/hookRegistry.ts) enables every hook it reads;
// "disabled" under hooks is skipped as a field (HOOKS_CONFIG_FIELDS) and
// read by nothing, and Gemini CLI's hooksConfig.disabled is not a Qwen
// Code setting. Only disableAllHooks (every hook of every source) or
// disabling the whole extension (`qwen extensions disable`, which takes
// its skills, commands and agents too) stops it.
func TestQwenHooksGoOnlyWhole(t *testing.T) {
	q := installed(t)
	cmd := hookCommand(q.markers)
	q.set(map[string]any{"hooks": map[string]any{"disabled": []string{cmd}}, "hooksConfig": map[string]any{"disabled": []string{cmd}}})
	q.run("-p", "hi")
	if !q.ran("hook") {
		t.Errorf("hooks.disabled or hooksConfig.disabled now turns a plugin's hook off in Qwen Code: the switch may take hooks one by one")
	}
	q.set(map[string]any{"disableAllHooks": true})
	q.run("-p", "hi")
	if q.ran("hook") {
		t.Errorf("disableAllHooks did not stop the plugin's hook")
	}
	q.set(map[string]any{"disableAllHooks": false})
	q.run("extensions", "disable", "pq")
	q.run("-p", "hi")
	if hook, srv := q.ran("hook"), q.ran("srv"); hook || srv {
		t.Errorf("a disabled extension in a session: its hook ran %v, its server started %v", hook, srv)
	}
	q.run("mcp", "list")
	if q.ran("srv") {
		t.Errorf("qwen mcp list started a server of a disabled extension")
	}
}
