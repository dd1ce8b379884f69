package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// The probe plugin of TestAgentPluginsAppendixA: one plugin holding an
// example of every item of the checklist, installed with `gemkit
// extensions install` and served by one gemkit mcp. The ${…} below are
// left for gemkit to expand or keep; FAR and LEGACY are replaced by the
// loopback servers' URLs.
const (
	probePluginJSON = `{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
  "name": "probe",
  "version": "1.0.0",
  "description": "Every item of Appendix A.",
  "mcpServers": {"inline": {"type": "stdio", "command": "node"}},
  "hooks": "./hooks/hooks.json",
  "extensions": {"com.example.client": 5, "dev.other": {"any": ["thing"]}}
}`
	probeMCPJSON = `{
  "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
  "mcpServers": {
    "main": {"type": "stdio", "command": "node",
      "args": ["${PLUGIN_ROOT}/server.mjs", "${PLUGIN_ROOT}/a", "${HOME}", "$HOME", "${PLUGIN_ROOT}${PLUGIN_DATA}", "${CLAUDE_PLUGIN_ROOT}"],
      "env": {"PROBE_TOOL": "main", "DATA_DIR": "${PLUGIN_DATA}/database", "LIT": "${HOME}:$HOME", "NODE_USE_ENV_PROXY": "0",
              "HOME": "${PLUGIN_DATA}/h", "${PLUGIN_ROOT}": "key"}},
    "rel": {"type": "stdio", "command": "./bin/probe", "cwd": "./sub", "env": {"PROBE_TOOL": "rel"}},
    "datacwd": {"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/server.mjs"], "cwd": "${PLUGIN_DATA}", "env": {"PROBE_TOOL": "datacwd"}},
    "pathless": {"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/server.mjs"], "env": {"PROBE_TOOL": "pathless", "PATH": "/nonexistent"}},
    "missing": {"type": "stdio", "command": "./bin/missing", "env": {"PROBE_TOOL": "missing"}},
    "dataout": {"type": "stdio", "command": "node", "args": ["${PLUGIN_ROOT}/server.mjs"], "cwd": "${PLUGIN_DATA}/escape", "env": {"PROBE_TOOL": "dataout"}},
    "shell": {"type": "stdio", "command": "node server.mjs"},
    "phcmd": {"type": "stdio", "command": "${PLUGIN_ROOT}/bin/probe"},
    "badcwd": {"type": "stdio", "command": "node", "cwd": "sub"},
    "outcwd": {"type": "stdio", "command": "node", "cwd": "./out"},
    "reserved": {"type": "stdio", "command": "node", "env": {"PLUGIN_ROOT": "/evil"}},
    "ws": {"type": "websocket", "url": "wss://example.com/mcp"},
    "mixed": {"type": "stdio", "command": "node", "url": "https://example.com/mcp"},
    "plainhttp": {"type": "streamable-http", "url": "http://example.com/mcp"},
    "userinfo": {"type": "streamable-http", "url": "https://me:pw@example.com/mcp"},
    "fragment": {"type": "streamable-http", "url": "https://example.com/mcp#frag"},
    "dupheader": {"type": "streamable-http", "url": "https://example.com/mcp", "headers": {"X-A": "1", "x-a": "2"}},
    "far": {"type": "streamable-http", "url": "FAR", "headers": {"X-Tenant": "${TENANT}"}},
    "legacy": {"type": "sse", "url": "LEGACY"}
  }
}`
	// hookMarker is what the plugin's hooks/hooks.json and its
	// com.example.client/ hook would write if anything ran them.
	hookMarker = "hook-ran-3307"
)

// probeRun is the probe plugin installed and served.
type probeRun struct {
	f           *fixture
	src, root   string // its source folder; its installed folder, real
	data        string // its PLUGIN_DATA
	c           *sdkClient
	tools       string // the names gemkit mcp lists, space-separated
	validate    string // `gemkit extensions validate` of its source
	far, legacy *remoteProbe
}

// remoteProbe is a loopback MCP server that records what reaches it.
type remoteProbe struct {
	url   string
	mu    sync.Mutex
	first string   // the first request's method and Accept
	heads []string // every X-Tenant header received
}

func (r *remoteProbe) seen() (first string, tenants []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first, append([]string(nil), r.heads...)
}

// startRemoteProbe serves one tool, name, over Streamable HTTP or (sse)
// the 2024-11-05 HTTP+SSE transport.
func startRemoteProbe(t *testing.T, name string, sse bool) *remoteProbe {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "Answers from a loopback server."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " answered"}}}, nil, nil
		})
	get := func(*http.Request) *mcp.Server { return srv }
	var h http.Handler = mcp.NewStreamableHTTPHandler(get, nil)
	path := "/mcp"
	if sse {
		h, path = mcp.NewSSEHandler(get, nil), "/sse"
	}
	r := &remoteProbe{}
	hts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		if r.first == "" {
			r.first = req.Method + " " + req.Header.Get("Accept")
		}
		if v := req.Header.Values("X-Tenant"); len(v) > 0 {
			r.heads = append(r.heads, v...)
		}
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(hts.Close)
	r.url = hts.URL + path
	return r
}

// setUpProbe writes, installs and serves the probe plugin; unprivileged:
// gemkit mcp, its servers and every later gemkit command run as uid
// 65534.
func setUpProbe(t *testing.T, unprivileged bool) *probeRun {
	gemkittest.Interop(t) // node, for the servers
	p := &probeRun{f: newFixture(t)}
	f := p.f
	p.far, p.legacy = startRemoteProbe(t, "far_lookup", false), startRemoteProbe(t, "sse_lookup", true)
	server, err := os.ReadFile(filepath.Join("testdata", "agentplugin", "server.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	p.src = pluginSource(t, filepath.Join(f.root, "src", "probe"), map[string]string{
		"plugin.json": probePluginJSON,
		"mcp.json":    strings.NewReplacer("FAR", p.far.url, "LEGACY", p.legacy.url).Replace(probeMCPJSON),
		"sub/keep":    "", "skills/deep/nested/x/SKILL.md": "---\nname: x\ndescription: Too deep.\n---\nDeep.\n",
		"skills/bad/SKILL.md":                 "---\nname: notbad\ndescription: Named apart from its folder.\n---\nBad.\n",
		"hooks/hooks.json":                    `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo ` + hookMarker + ` > /tmp/` + hookMarker + `"}]}]}}`,
		"com.example.client/hooks/hooks.json": `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo ` + hookMarker + `"}]}]}}`,
		"agents/helper.md":                    "---\nname: helper\ndescription: An agent.\nmcp_servers:\n  s:\n    command: node\n---\nHelp.\n",
		"commands/greet.toml":                 "prompt = \"!{echo " + hookMarker + "}\"\n",
		"GEMINI.md":                           "context-marker-" + hookMarker + "\n",
		".lsp.json":                           `{"go": {"command": "gopls"}}`,
	})
	writeFile(t, filepath.Join(p.src, "bin", "probe"), string(server), 0o755)
	// Links out to a folder of the system's: consent refuses a link
	// into a folder others may write, such as the test's in /tmp.
	for link, target := range map[string]string{"skills/far": "/usr", "out": "/usr"} {
		if err := os.Symlink(target, filepath.Join(p.src, link)); err != nil {
			t.Fatal(err)
		}
	}
	// Its data folder, made beforehand as gemkit makes it, holds a link
	// out, which a cwd under ${PLUGIN_DATA} must not follow out.
	p.data = filepath.Join(f.home, ".local", "share", "gemkit", "extension-data", "probe")
	if err := os.MkdirAll(p.data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr", filepath.Join(p.data, "escape")); err != nil {
		t.Fatal(err)
	}
	if out, err := f.gemkit("extensions", "install", "--consent", p.src); err != nil {
		t.Fatalf("gemkit extensions install: %v\n%s", err, out)
	}
	if out, err := f.gemkit("extensions", "sandbox", "probe", "--allow-host", hostOf(p.far.url), "--allow-host", hostOf(p.legacy.url), "--allow-env", "PLUGIN_ROOT"); err != nil {
		t.Fatalf("gemkit extensions sandbox: %v\n%s", err, out)
	}
	p.validate, _ = f.gemkit("extensions", "validate", p.src)
	if p.root, err = filepath.EvalSymlinks(filepath.Join(f.home, ".gemini", "gemkit", "plugins", "probe")); err != nil {
		t.Fatal(err)
	}
	// gemkit mcp's own environment names another PLUGIN_ROOT, passed
	// to the servers by name (--allow-env): the client's wins (§9.1).
	if unprivileged {
		asUnprivileged(t, f)
	}
	p.c = startClient(t, f, []string{"PLUGIN_ROOT=/evil"}, append([]string{"stdio"}, mcpCommand(f)...)...)
	var tools []struct{ Name string }
	p.c.do(map[string]any{"op": "listTools"}, &tools)
	for _, tl := range tools {
		p.tools += " " + tl.Name
	}
	p.tools += " "
	return p
}

func hostOf(u string) string {
	h, _, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
	return h
}

// probed is what the probe tool of the server answered.
type probed struct {
	Argv      []string          `json:"argv"`
	Cwd       string            `json:"cwd"`
	Env       map[string]string `json:"env"`
	WroteData string            `json:"wroteData"`
}

func (p *probeRun) probe(t *testing.T, server string) probed {
	t.Helper()
	r := p.c.call(map[string]any{"op": "callTool", "name": "probe_" + server})
	var out probed
	if r.IsError || json.Unmarshal([]byte(r.text()), &out) != nil {
		t.Fatalf("probe_%s: %s", server, r.text())
	}
	return out
}

// refusedLink links a plugin of the files given over the hello plugin's
// and returns what gemkit said; it must refuse.
func (p *probeRun) refusedLink(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	src := pluginSource(t, filepath.Join(p.f.root, "refused", name), files)
	out, err := p.f.gemkit("extensions", "link", "--consent", src)
	if err == nil {
		t.Fatalf("%s was linked:\n%s", name, out)
	}
	return out
}

func wantIn(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

func wantNotIn(t *testing.T, what, text string, nots ...string) {
	t.Helper()
	for _, w := range nots {
		if strings.Contains(text, w) {
			t.Errorf("%s has %q:\n%s", what, w, text)
		}
	}
}

// loaded is the installed probe plugin as gemkit's store loads it.
func (p *probeRun) loaded(t *testing.T) *extension.Extension {
	t.Helper()
	in, err := extension.OpenStore(p.f.home).Get("probe")
	if err != nil || in.Extension == nil {
		t.Fatalf("get probe: %v, %+v", err, in)
	}
	return in.Extension
}
