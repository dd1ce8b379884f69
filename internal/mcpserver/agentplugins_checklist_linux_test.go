package mcpserver_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// appendixA is one item of the Agent Plugins 1.0.0 conformance checklist
// (agentplugins/agent-plugins-spec, spec/1.0.0.md, "Appendix A:
// Conformance Checklist", at bd383552095128f6effe895b9257cfd580a6d179),
// in its words, with the check that gemkit does it, made for real:
// gemkit installs, links and validates the plugin, and gemkit mcp serves
// it, its servers started in gemkit's sandbox.
type appendixA struct {
	group, item string
	check       func(t *testing.T, p *probeRun)
}

// TestAgentPluginsAppendixA checks every item of Appendix A, one row
// each, in its order. gemkit's plugin client supports both component
// types (skills and MCP servers) and all three transports. As root and
// as uid 65534.
func TestAgentPluginsAppendixA(t *testing.T) {
	t.Parallel()
	gemkittest.AsRootAndUnprivileged(t, func(t *testing.T, unprivileged bool) {
		p := setUpProbe(t, unprivileged)
		for _, row := range appendixATable() {
			t.Run(row.group+"/"+row.item, func(t *testing.T) { row.check(t, p) })
		}
	})
	if _, err := os.Stat("/tmp/" + hookMarker); err == nil {
		t.Errorf("something ran the plugin's hooks/hooks.json")
	}
}

func appendixATable() []appendixA {
	return slices.Concat(loaderRows(), discoveryRows(), mcpRows(), environmentRows(), resilienceRows())
}

func loaderRows() []appendixA {
	const g = "Plugin loader"
	return []appendixA{
		{g, "Parse and validate plugin.json (§5.1, §5.2)", func(t *testing.T, p *probeRun) {
			wantIn(t, "the tools", p.tools, " probe_main ")
			out := p.refusedLink(t, "array", map[string]string{"plugin.json": `[1]`})
			wantIn(t, "the refusal", out, "plugin.json is not an Agent Plugins 1.0.0 plugin gemkit loads: it is a JSON array, not an object")
			out = p.refusedLink(t, "twice", map[string]string{"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "good", "name": "evil"}`})
			wantIn(t, "the refusal", out, `the key "name" is given twice`)
		}},
		{g, "Validate required $schema and name fields (§5.3)", func(t *testing.T, p *probeRun) {
			for file, want := range map[string]string{
				`{"name": "x"}`: "$schema: is missing",
				`{"$schema": "https://agent-plugins.org/schemas/2.0.0/plugin.schema.json", "name": "x"}`: "is not an Agent Plugins version gemkit reads",
				`{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"}`:              "name: is missing",
				`{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": 7}`:   "name: is a JSON number, not a string",
			} {
				wantIn(t, "the refusal", p.refusedLink(t, "required", map[string]string{"plugin.json": file}), want)
			}
		}},
		{g, "Validate plugin name against naming constraints (§5.5)", func(t *testing.T, p *probeRun) {
			for _, name := range []string{"My-Plugin", "-start", "has--double", "too.many..dots"} {
				out := p.refusedLink(t, "n"+name, map[string]string{"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "` + name + `"}`})
				wantIn(t, "the refusal", out, `name: "`+name+`"`)
			}
			src := pluginSource(t, filepath.Join(p.f.root, "named"), map[string]string{"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "acme.tools"}`})
			if out, err := p.f.gemkit("extensions", "link", "--consent", src); err != nil {
				t.Errorf("acme.tools: %v\n%s", err, out)
			}
		}},
		{g, "Report and ignore unknown plugin.json fields (§5.2)", func(t *testing.T, p *probeRun) {
			wantIn(t, "validate", p.validate, "plugin.json: mcpServers: an unknown field, ignored", "plugin.json: hooks: an unknown field, ignored")
			wantNotIn(t, "the tools", p.tools, "probe_inline")
		}},
		{g, "Ignore unimplemented namespaces in extensions without validating the contents of their values (§8.1)", func(t *testing.T, p *probeRun) {
			wantIn(t, "validate", p.validate, "gemkit implements none of com.example.client, dev.other: ignored")
			wantIn(t, "the tools", p.tools, " probe_main ")
		}},
		{g, "Reject package paths that resolve outside the plugin root (§4.1)", func(t *testing.T, p *probeRun) {
			src := pluginSource(t, filepath.Join(p.f.root, "linkedout"), nil)
			os.Remove(filepath.Join(src, "plugin.json"))
			if err := os.Symlink(filepath.Join(p.src, "plugin.json"), filepath.Join(src, "plugin.json")); err != nil {
				t.Fatal(err)
			}
			out, err := p.f.gemkit("extensions", "link", "--consent", src)
			if err == nil || !strings.Contains(out, "plugin.json is not an Agent Plugins 1.0.0 plugin gemkit loads: it is a link out of the plugin's folder") {
				t.Errorf("a plugin.json linked out: %v\n%s", err, out)
			}
			wantIn(t, "validate", p.validate, "skills/far: it is a link out of the plugin's folder (§4.1): this skill is skipped",
				`mcpServers.outcwd: its cwd "./out" leads out of the plugin's folder through a link (§4.1)`)
			wantNotIn(t, "the instructions", p.c.instructions, "`far`")
			r := p.c.call(map[string]any{"op": "callTool", "name": "probe_dataout"})
			wantIn(t, "the call of a server whose cwd leads out of PLUGIN_DATA", r.text(), "leads out of "+p.data)
		}},
		{g, "Discover implemented file-based extensions from their top-level namespace directories (§8.2)", func(t *testing.T, p *probeRun) {
			// gemkit implements no namespace: com.example.client/ holds a
			// hooks.json, which is neither read nor run.
			ext := p.loaded(t)
			if hooks, err := ext.CommandHooks(); err != nil || len(hooks) != 0 {
				t.Errorf("hooks %v, %v", hooks, err)
			}
			wantNotIn(t, "the instructions", p.c.instructions, "com.example.client")
		}},
	}
}

func discoveryRows() []appendixA {
	const g = "Component discovery"
	return []appendixA{
		{g, "Scan the fixed location for each supported component type (§6.1)", func(t *testing.T, p *probeRun) {
			wantIn(t, "the instructions", p.c.instructions, "- **probe**: Every item of Appendix A.", "`greet`: Greet the person warmly from the hello plugin.")
			wantNotIn(t, "the instructions", p.c.instructions, "Too deep.", "Named apart from its folder.")
			wantIn(t, "validate", p.validate, "its name notbad is not its folder's, bad")
			r := p.c.call(map[string]any{"op": "callTool", "name": "read_doc", "args": map[string]any{"extension": "probe", "name": "skill:greet"}})
			wantIn(t, "the skill", r.text(), "hello-skill-5093")
			var read struct{ Contents []struct{ URI, Text string } }
			p.c.do(map[string]any{"op": "readResource", "uri": "gemkit-doc://probe/skill:greet"}, &read)
			if len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "hello-skill-5093") {
				t.Errorf("the skill as a resource: %+v", read)
			}
			wantIn(t, "the tools", p.tools, " probe_main ", " probe_rel ", " probe_far_lookup ", " probe_sse_lookup ")
		}},
		{g, "Ignore missing fixed locations without error (§6.2)", func(t *testing.T, p *probeRun) {
			src := filepath.Join(p.f.root, "bare")
			writeFile(t, filepath.Join(src, "plugin.json"), `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "bare"}`, 0o644)
			out, err := p.f.gemkit("extensions", "link", "--consent", src)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if out, _ := p.f.gemkit("extensions", "validate", src); strings.Contains(out, "problem") {
				t.Errorf("validate of a plugin with only plugin.json:\n%s", out)
			}
		}},
	}
}

func mcpRows() []appendixA {
	const g = "MCP configuration"
	return []appendixA{
		{g, "Select a supported $schema, then validate the closed mcp.json schema and each server variant (§7.2.1)", func(t *testing.T, p *probeRun) {
			wantIn(t, "validate", p.validate, "mcpServers.mixed: the field url does not belong to a stdio server", `mcpServers.ws: its type "websocket" is not one`)
			src := pluginSource(t, filepath.Join(p.f.root, "newer"), map[string]string{
				"plugin.json": `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "newer"}`,
				"mcp.json":    `{"$schema": "https://agent-plugins.org/schemas/1.1.0/mcp.schema.json", "mcpServers": {}}`})
			out, _ := p.f.gemkit("extensions", "validate", src)
			wantIn(t, "validate", out, "mcp.json: its $schema is not https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "the plugin's MCP servers are not loaded")
		}},
		{g, "If supporting MCP, implement at least one of stdio or Streamable HTTP (§7.2.1)", func(t *testing.T, p *probeRun) {
			p.probe(t, "main")
			if r := p.c.call(map[string]any{"op": "callTool", "name": "probe_far_lookup"}); r.IsError || r.text() != "far_lookup answered" {
				t.Errorf("the Streamable HTTP server: %+v", r)
			}
		}},
		{g, "Use each server entry's declared transport for the initial connection attempt (§7.2.1)", func(t *testing.T, p *probeRun) {
			if r := p.c.call(map[string]any{"op": "callTool", "name": "probe_sse_lookup"}); r.IsError || r.text() != "sse_lookup answered" {
				t.Errorf("the SSE server: %+v", r)
			}
			if first, _ := p.far.seen(); !strings.HasPrefix(first, "POST ") {
				t.Errorf("the Streamable HTTP server was first met with %q, not a POST", first)
			}
			if first, _ := p.legacy.seen(); !strings.HasPrefix(first, "GET ") || !strings.Contains(first, "text/event-stream") {
				t.Errorf("the SSE server was first met with %q, not a GET of its event stream", first)
			}
		}},
		{g, "Enforce remote URL and literal-header requirements (§7.2.1)", func(t *testing.T, p *probeRun) {
			wantIn(t, "validate", p.validate, "mcpServers.plainhttp: its url", "requires https there", "mcpServers.userinfo: its url", "holds user information",
				"mcpServers.fragment: its url", "holds a fragment", "mcpServers.dupheader: its headers give", "one name in two casings")
			p.c.call(map[string]any{"op": "callTool", "name": "probe_far_lookup"})
			if _, tenants := p.far.seen(); len(tenants) == 0 || slices.ContainsFunc(tenants, func(s string) bool { return s != "${TENANT}" }) {
				t.Errorf("the header reached the server as %q, not as written", tenants)
			}
		}},
	}
}

func environmentRows() []appendixA {
	const g = "Environment and expansion"
	return []appendixA{
		{g, "If the client launches plugin subprocesses, provide PLUGIN_ROOT and a dedicated writable PLUGIN_DATA directory (§9.1)", func(t *testing.T, p *probeRun) {
			got := p.probe(t, "main")
			if got.Env["PLUGIN_ROOT"] != p.root || got.Env["PLUGIN_DATA"] != p.data || got.WroteData != "yes" {
				t.Errorf("PLUGIN_ROOT %q (want %q), PLUGIN_DATA %q (want %q), written: %s", got.Env["PLUGIN_ROOT"], p.root, got.Env["PLUGIN_DATA"], p.data, got.WroteData)
			}
			if _, err := os.Stat(filepath.Join(p.data, "probe.txt")); err != nil {
				t.Errorf("what the server wrote is not in its data folder: %v", err)
			}
		}},
		{g, "Resolve MCP server command as a single bare or plugin-relative executable token (§7.2.1)", func(t *testing.T, p *probeRun) {
			p.probe(t, "rel")
			wantIn(t, "validate", p.validate, `mcpServers.shell: its command "node server.mjs" is not one program name`,
				`mcpServers.phcmd: its command "${PLUGIN_ROOT}/bin/probe" is neither a bare program name nor a path starting ./`)
		}},
		{g, "Use the plugin root as the default MCP server working directory (§7.2.1)", func(t *testing.T, p *probeRun) {
			if got := p.probe(t, "main"); got.Cwd != p.root {
				t.Errorf("cwd %q, want %q", got.Cwd, p.root)
			}
		}},
		{g, "Validate explicit cwd forms and post-resolution containment (§7.2.1)", func(t *testing.T, p *probeRun) {
			if got := p.probe(t, "rel"); got.Cwd != filepath.Join(p.root, "sub") {
				t.Errorf("./sub: cwd %q", got.Cwd)
			}
			if got := p.probe(t, "datacwd"); got.Cwd != p.data {
				t.Errorf("${PLUGIN_DATA}: cwd %q", got.Cwd)
			}
			wantIn(t, "validate", p.validate, `mcpServers.badcwd: its cwd "sub" is none of ./PATH, ${PLUGIN_ROOT}[/PATH] and ${PLUGIN_DATA}[/PATH]`, "mcpServers.outcwd: ")
		}},
		{g, "Overlay configured env entries on a client-selected base environment (§9.1)", func(t *testing.T, p *probeRun) {
			got := p.probe(t, "main")
			// gemkit's base sets NODE_USE_ENV_PROXY=1 and HOME to the
			// data folder.
			if got.Env["NODE_USE_ENV_PROXY"] != "0" || got.Env["HOME"] != p.data+"/h" || got.Env["PROBE_TOOL"] != "main" {
				t.Errorf("env %v", got.Env)
			}
		}},
		{g, "Set client-provided PLUGIN_ROOT and PLUGIN_DATA after applying configured env (§9.1)", func(t *testing.T, p *probeRun) {
			wantIn(t, "validate", p.validate, "mcpServers.reserved: its env sets PLUGIN_ROOT, which the client alone sets")
			if got := p.probe(t, "main"); got.Env["PLUGIN_ROOT"] != p.root {
				t.Errorf("PLUGIN_ROOT %q: gemkit mcp's own (/evil), passed by name, was not replaced", got.Env["PLUGIN_ROOT"])
			}
		}},
		{g, "Do not require configured PATH to affect bare-command resolution (§7.2.1)", func(t *testing.T, p *probeRun) {
			if got := p.probe(t, "pathless"); got.Env["PATH"] != "/nonexistent" {
				t.Errorf("PATH %q: the configured PATH does not overlay the base", got.Env["PATH"])
			}
		}},
		{g, "Expand only ${PLUGIN_ROOT} and ${PLUGIN_DATA} in MCP server args, env, and cwd (§9.2)", func(t *testing.T, p *probeRun) {
			got := p.probe(t, "main")
			want := []string{p.root + "/a", "${HOME}", "$HOME", p.root + p.data, "${CLAUDE_PLUGIN_ROOT}"}
			if !slices.Equal(got.Argv, want) {
				t.Errorf("argv %q, want %q", got.Argv, want)
			}
			if got.Env["DATA_DIR"] != p.data+"/database" || got.Env["LIT"] != "${HOME}:$HOME" || got.Env["${PLUGIN_ROOT}"] != "key" {
				t.Errorf("env %v", got.Env)
			}
			wantIn(t, "validate", p.validate, "mcpServers.main: ${CLAUDE_PLUGIN_ROOT}, ${HOME} passed as written")
		}},
	}
}

func resilienceRows() []appendixA {
	const g = "Resilience"
	return []appendixA{
		{g, "Ignore unsupported component types (§11.3)", func(t *testing.T, p *probeRun) {
			ext := p.loaded(t)
			if a, _ := ext.AgentServers(p.f.ws); len(a) != 0 || len(ext.Agents()) != 0 || len(ext.CustomCommands()) != 0 || len(ext.ContextFiles) != 0 || len(ext.ShellCommands()) != 0 {
				t.Errorf("agents %v, commands %v, context %v", ext.Agents(), ext.CustomCommands(), ext.ContextFiles)
			}
			wantNotIn(t, "the instructions", p.c.instructions, "helper", "context-marker-")
		}},
		{g, "Skip server entries whose declared transport is unsupported without affecting other servers or components (§7.2.2)", func(t *testing.T, p *probeRun) {
			// gemkit supports stdio, streamable-http and sse; a type
			// outside those is skipped alone.
			wantIn(t, "validate", p.validate, `mcpServers.ws: its type "websocket" is not one Agent Plugins 1.0.0 defines (stdio, streamable-http, sse): this server is skipped`)
			p.probe(t, "main")
		}},
		{g, "Continue loading when an independent component fails (§11.3)", func(t *testing.T, p *probeRun) {
			r := p.c.call(map[string]any{"op": "callTool", "name": "probe_missing"})
			wantIn(t, "the call of a server that cannot start", r.text(), "missing")
			p.probe(t, "main")
			r = p.c.call(map[string]any{"op": "callTool", "name": "read_doc", "args": map[string]any{"extension": "probe", "name": "skill:greet"}})
			wantIn(t, "the skill", r.text(), "hello-skill-5093")
		}},
		{g, "Support at least one component type (§11.1)", func(t *testing.T, p *probeRun) {
			// Both: a skill read, a server's tool answered.
			r := p.c.call(map[string]any{"op": "callTool", "name": "read_doc", "args": map[string]any{"extension": "probe", "name": "skill:greet"}})
			wantIn(t, "the skill", r.text(), "hello-skill-5093")
			p.probe(t, "datacwd")
		}},
	}
}
