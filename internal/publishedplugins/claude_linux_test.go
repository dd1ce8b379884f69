package publishedplugins

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
)

// marketplace is the name of the directory marketplace the tests
// install the vendored plugins from. Not the published one's name:
// Claude Code keeps claude-plugins-official for Anthropic's own source.
const marketplace = "published"

// plugin is one vendored plugin and how a Claude Code session shows that
// what it carries runs.
type plugin struct {
	name string // its name in Claude Code
	// market, when set, is the marketplace its vendored folder,
	// testdata/dir, is itself (its .claude-plugin/marketplace.json),
	// installed as published; else the folder is
	// testdata/claude-plugins-official/<name>, installed from a
	// marketplace of the tests' own (marketplace).
	market, dir string
	// prepare readies s before Claude Code starts (a registry, a file
	// the plugin reads) and returns the model's script.
	prepare func(t *testing.T, s *session) func(*claudetest.Request) claudetest.Reply
	// parts are what gemkit reads the installed plugin to carry
	// (partsOf): the parts the switch takes.
	parts []string
	// check is run on the model's requests once the session ended well.
	check func(t *testing.T, s *session, reqs []*claudetest.Request)
	// switched, when set, is the check of the switched rows where the
	// sandbox keeps the plugin from doing what it does bare (said why
	// where it is set).
	switched func(t *testing.T, s *session, reqs []*claudetest.Request)
}

// row is a plugin run in a session as installed (bare: Claude Code runs
// it unconfined) or switched to gemkit's sandbox. The switched rows join
// the table with issue 74's switch (`gemkit plugins sandbox P@M`, run
// between the install and the session), on the same plugins and checks.
type row struct {
	plugin   *plugin
	switched bool
	// unprivileged runs every process of the row as uid 65534.
	unprivileged bool
}

// id is the plugin's PLUGIN@MARKETPLACE.
func (p *plugin) id() string {
	if p.market != "" {
		return p.name + "@" + p.market
	}
	return p.name + "@" + marketplace
}

func (r row) String() string {
	switch {
	case r.switched && r.unprivileged:
		return r.plugin.name + "/switched-uid65534"
	case r.switched:
		return r.plugin.name + "/switched"
	}
	return r.plugin.name + "/bare"
}

// TestPublishedPluginsRealClaude installs each vendored plugin with the
// real Claude Code 2.1.330 from a directory marketplace, offline, and
// runs a headless session (claude -p) against a scripted model: the
// context7 and chrome-devtools-mcp servers answer a tool call,
// explanatory-output-style's SessionStart hook gives the model its
// context, ralph-loop's Stop hook feeds the model its prompt again,
// hookify's PreToolUse hook denies a Bash call. Each runs bare, then
// switched with gemkit plugins sandbox (as root and as uid 65534), its
// checks the same: context7's and chrome-devtools-mcp's servers answer
// in gemkit's sandbox, through the twin's gemkit mcp;
// explanatory-output-style's and hookify's hooks answer through gemkit's
// hook runner. ralph-loop's hook cannot keep its loop in the sandbox,
// which its row says (switched).
func TestPublishedPluginsRealClaude(t *testing.T) {
	gemkittest.SkipShort(t, "the real Claude Code")
	claude := claudetest.Binary(t)
	var rows []row
	for _, p := range plugins {
		rows = append(rows, row{plugin: p}, row{plugin: p, switched: true}, row{plugin: p, switched: true, unprivileged: true})
	}
	for _, r := range rows {
		t.Run(r.String(), func(t *testing.T) {
			if r.unprivileged && os.Getuid() != 0 {
				t.Skip("needs root to run everything as uid 65534; CI runs as root")
			}
			s := newSession(t, claude, r.plugin)
			model := claudetest.StartModel(t, r.plugin.prepare(t, s))
			s.start(t, model)
			if r.unprivileged {
				s.asNobody(t)
			}
			s.install(t, r.plugin)
			s.checkRead(t, r.plugin)
			if r.switched {
				s.switchOn(t, r.plugin)
			}
			out, err := s.run(t, "Go on.")
			reqs := model.Requests()
			if err != nil || len(reqs) == 0 {
				t.Fatalf("claude -p: %v, %d requests of the model\n%s", err, len(reqs), out)
			}
			if check := r.plugin.check; r.switched && r.plugin.switched != nil {
				r.plugin.switched(t, s, reqs)
			} else {
				check(t, s, reqs)
			}
			if t.Failed() {
				last := reqs[len(reqs)-1].LastUser()
				t.Logf("claude -p said:\n%s\nthe model's last input ends: %s", out, last[max(0, len(last)-500):])
			}
		})
	}
}

// session is a home of its own in which Claude Code installs one plugin
// from a marketplace folder holding its vendored copy, and the project
// folder it runs in.
type session struct {
	claude, home, cfg, proj, mkt string
	env                          []string
	allow                        []string // --allowedTools of the run
	extraEnv                     []string // what the plugin's servers are given beside claudetest.Home's
	// user, when set, is the command that runs each process as uid
	// 65534 (setpriv), before its own.
	user []string
	// tools are the names the session's tools have once the plugin is
	// switched (the twin's server's), by the names they have bare; mu
	// guards them, which the model's server reads.
	mu    sync.Mutex
	tools map[string]string
	// kit is gemkit's binary where the session's user runs it ("": the
	// test's build).
	kit string
}

// newSession copies p's vendored folder where Claude Code installs it
// from: the marketplace it is, or a marketplace of the tests' holding it.
func newSession(t *testing.T, claude string, p *plugin) *session {
	t.Helper()
	dir := t.TempDir()
	s := &session{claude: claude, home: filepath.Join(dir, "home"), proj: filepath.Join(dir, "proj"), mkt: filepath.Join(dir, "mkt")}
	s.cfg = filepath.Join(s.home, ".claude")
	if p.market != "" {
		if err := os.CopyFS(s.mkt, os.DirFS(filepath.Join("testdata", p.dir))); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := os.CopyFS(filepath.Join(s.mkt, p.name), os.DirFS(filepath.Join(vendored, p.name))); err != nil {
			t.Fatal(err)
		}
		gemkittest.WriteFile(t, filepath.Join(s.mkt, ".claude-plugin", "marketplace.json"),
			`{"name":"`+marketplace+`","owner":{"name":"gemkit tests"},"plugins":[{"name":"`+p.name+`","source":"./`+p.name+`"}]}`)
	}
	if err := os.MkdirAll(s.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// start writes the home in which Claude Code runs offline against model
// (claudetest.Home) and keeps its environment.
func (s *session) start(t *testing.T, model *claudetest.Model) {
	t.Helper()
	s.env = append(claudetest.Home(t, s.home, model, gemkittest.ClosedPort(t), s.proj), "PATH="+os.Getenv("PATH"))
	s.env = append(s.env, s.extraEnv...)
}

// install adds the marketplace and installs the plugin from it, for
// the user, as a person does with Claude Code's own commands.
func (s *session) install(t *testing.T, p *plugin) {
	t.Helper()
	for _, args := range [][]string{{"plugin", "marketplace", "add", s.mkt}, {"plugin", "install", p.id()}} {
		if out, err := s.command(t, args...).CombinedOutput(); err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// checkRead checks that gemkit reads the installed plugin as Claude Code
// installed it: enabled for the user, read whole, with p's parts.
func (s *session) checkRead(t *testing.T, p *plugin) {
	t.Helper()
	h, err := claudeplugin.List(s.cfg, s.proj)
	if err != nil {
		t.Fatal(err)
	}
	id := p.id()
	got, err := h.Find(id)
	if err != nil {
		t.Fatal(err)
	}
	if sc, on := got.EnabledNow(); !on || sc.Scope != "user" || got.Unreadable != "" || len(h.Unreadable) > 0 {
		t.Errorf("%s: enabled %+v, unreadable %q %q", id, got.Enabled, got.Unreadable, h.Unreadable)
	}
	if parts := partsOf(got); !slices.Equal(parts, p.parts) {
		t.Errorf("%s read with parts\n%q\nwant\n%q", id, parts, p.parts)
	}
}

// partsOf names what a plugin carries, a line a part.
func partsOf(p *claudeplugin.Plugin) []string {
	var parts []string
	for _, sv := range p.Servers {
		parts = append(parts, "server "+sv.Name+": "+strings.Join(append([]string{sv.Command}, sv.Args...), " ")+sv.URL)
	}
	for _, h := range p.Hooks {
		parts = append(parts, "hook "+h.Event+": "+strings.Join(h.Commands, "; "))
	}
	for _, k := range []struct {
		word  string
		names []string
	}{{"lsp", serverNames(p.LSP)}, {"monitors", serverNames(p.Monitors)}, {"skills", p.Skills}, {"agents", p.Agents}, {"commands", p.Commands}} {
		if len(k.names) > 0 {
			parts = append(parts, k.word+": "+strings.Join(k.names, " "))
		}
	}
	return parts
}

func serverNames(ss []claudeplugin.Server) []string {
	var names []string
	for _, s := range ss {
		names = append(names, s.Name)
	}
	return names
}

// run runs a headless session in the project with prompt.
func (s *session) run(t *testing.T, prompt string) (string, error) {
	t.Helper()
	args := []string{"-p"}
	if len(s.allow) > 0 {
		var allow []string
		for _, a := range s.allow {
			allow = append(allow, s.tool(a))
		}
		args = append(args, "--allowedTools", strings.Join(allow, ","))
	}
	out, err := s.command(t, append(args, "--", prompt)...).CombinedOutput()
	return string(out), err
}

func (s *session) command(t *testing.T, args ...string) *exec.Cmd {
	return s.commandOf(t, s.claude, args...)
}

// commandOf runs the program prog with args in the project, with the
// session's environment, as the session's user.
func (s *session) commandOf(t *testing.T, prog string, args ...string) *exec.Cmd {
	argv := append(append(slices.Clone(s.user), prog), args...)
	cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...)
	cmd.Dir = s.proj
	cmd.Env = s.env
	return cmd
}

var plugins = []*plugin{context7, chromeDevTools, explanatoryOutputStyle, ralphLoop, hookify}

// context7's server is `npx -y @upstash/context7-mcp`: npm fetches the
// package from a registry the test serves on loopback (what
// interop/published holds, 4.1.1), named in the home's .npmrc. The
// server's tool answers offline: its fetch of Context7's API goes to
// the proxy Claude Code's environment names, a closed loopback port,
// and the answer says the fetch failed (the server's searchLibraries,
// dist/lib/api.js, answers an error as text, not as a tool error).
var context7 = &plugin{
	name:  "context7",
	parts: []string{"server context7: npx -y @upstash/context7-mcp"},
	prepare: func(t *testing.T, s *session) func(*claudetest.Request) claudetest.Reply {
		serveNPM(t, s, "@upstash/context7-mcp")
		s.allow = []string{context7Tool}
		return s.callTool(context7Tool, map[string]any{"libraryName": "react", "query": "How do I use hooks?"}, context7Answer, "Looked it up.")
	},
	check: func(t *testing.T, _ *session, reqs []*claudetest.Request) {
		if !answered(reqs, context7Answer) {
			t.Errorf("the server's answer (%q) never reached the model", context7Answer)
		}
	},
}

// context7Tool is the server's tool as Claude Code names a plugin's:
// mcp__plugin_<plugin>_<server>__<tool>.
const context7Tool = "mcp__plugin_context7_context7__resolve-library-id"

// context7Answer is what the tool answers offline.
const context7Answer = "Error searching libraries: TypeError: fetch failed"

// serveNPM serves the packages interop/published holds (pkg among them)
// from an npm registry on loopback, which the home's .npmrc names: the
// npx of a plugin's server fetches its package from there.
func serveNPM(t *testing.T, s *session, pkg string) {
	t.Helper()
	gemkittest.Interop(t) // node and npm
	modules := filepath.Join(gemkittest.RepoRoot(t), "interop", "published")
	if _, err := os.Stat(filepath.Join(modules, "node_modules", filepath.FromSlash(pkg))); err != nil {
		t.Fatalf("interop/published lacks %s: run `npm install --no-save` in interop/published (%v)", pkg, err)
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(modules, "node_modules")); err == nil {
		modules = filepath.Dir(real)
	}
	reg := npmregistrytest.New(t, &tarballs)
	reg.AddInstalled(modules)
	gemkittest.WriteFile(t, filepath.Join(s.home, ".npmrc"), "registry="+reg.URL+"\nfetch-retries=0\n")
}

// tarballs keeps the tarballs packed from interop/published across the
// rows of the test binary.
var tarballs npmregistrytest.Cache

// chromeDevTools is Google's plugin, installed from the marketplace its
// repository is (chrome-devtools-plugins): plugin.json's mcpServers runs
// `npx chrome-devtools-mcp@1.7.0`, whose package the loopback registry
// serves. With no Chrome where it looks for one, its tools answer that
// they cannot start it; its usage statistics are off
// (CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS, which its
// chrome-devtools-mcp-cli-options.js reads), and its check for a newer
// version asks the registry npm names.
var chromeDevTools = &plugin{
	name: "chrome-devtools-mcp", market: "chrome-devtools-plugins", dir: "chrome-devtools-mcp/chrome-devtools-mcp",
	parts: []string{"server chrome-devtools: npx chrome-devtools-mcp@1.7.0",
		"skills: a11y-debugging chrome-devtools chrome-devtools-cli debug-optimize-lcp memory-leak-debugging troubleshooting"},
	prepare: func(t *testing.T, s *session) func(*claudetest.Request) claudetest.Reply {
		serveNPM(t, s, "chrome-devtools-mcp")
		s.extraEnv = []string{"CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS=1"}
		s.allow = []string{chromeTool}
		return s.callTool(chromeTool, map[string]any{}, chromeAnswer, "No browser.")
	},
	check: func(t *testing.T, _ *session, reqs []*claudetest.Request) {
		if !answered(reqs, chromeAnswer) {
			t.Errorf("the server's answer (%q) never reached the model", chromeAnswer)
		}
	},
}

// chromeTool is the server's list_pages; chromeAnswer what it answers
// with no Chrome (puppeteer's words, from the server).
const (
	chromeTool   = "mcp__plugin_chrome-devtools-mcp_chrome-devtools__list_pages"
	chromeAnswer = "Could not find Google Chrome executable for channel 'stable'"
)

// explanatoryContext is a phrase of the context explanatory-output-style's
// SessionStart hook prints (hooks-handlers/session-start.sh).
const explanatoryContext = "You are in 'explanatory' output style mode"

var explanatoryOutputStyle = &plugin{
	name:  "explanatory-output-style",
	parts: []string{`hook SessionStart: command: bash "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/session-start.sh"`},
	prepare: func(*testing.T, *session) func(*claudetest.Request) claudetest.Reply {
		return func(*claudetest.Request) claudetest.Reply { return claudetest.Reply{Text: "Done."} }
	},
	check: func(t *testing.T, _ *session, reqs []*claudetest.Request) {
		if !strings.Contains(reqs[0].Raw, explanatoryContext) {
			t.Errorf("the SessionStart hook's context (%q) is not in the model's first request", explanatoryContext)
		}
	},
}

// ralphPrompt is the prompt of the loop the test starts: ralph-loop's
// Stop hook (hooks/stop-hook.sh) reads the state file its setup script
// writes (.claude/ralph-loop.local.md in the project), blocks the stop
// and gives the prompt back to the model, until max_iterations.
const ralphPrompt = "Tidy the ralph-marker-5081 notes."

var ralphLoop = &plugin{
	name: "ralph-loop",
	parts: []string{`hook Stop: command: bash "${CLAUDE_PLUGIN_ROOT}/hooks/stop-hook.sh"`,
		"commands: cancel-ralph help ralph-loop"},
	prepare: func(t *testing.T, s *session) func(*claudetest.Request) claudetest.Reply {
		gemkittest.Tool(t, "jq", "jq") // the hook's
		gemkittest.WriteFile(t, filepath.Join(s.proj, ".claude", "ralph-loop.local.md"),
			"---\nactive: true\niteration: 1\nmax_iterations: 2\ncompletion_promise: null\n---\n\n"+ralphPrompt+"\n")
		return func(*claudetest.Request) claudetest.Reply { return claudetest.Reply{Text: "Done."} }
	},
	check: func(t *testing.T, s *session, reqs []*claudetest.Request) {
		// The first stop is blocked with the prompt; at the second,
		// iteration 2 of 2, the hook ends the loop and removes its file.
		if len(reqs) != 2 || !strings.Contains(reqs[1].LastUser(), ralphPrompt) {
			t.Errorf("%d requests of the model, want 2, the second with the loop's prompt %q", len(reqs), ralphPrompt)
		}
		if _, err := os.Stat(filepath.Join(s.proj, ".claude", "ralph-loop.local.md")); !os.IsNotExist(err) {
			t.Errorf("the loop's state file is still there (%v): the Stop hook did not end the loop", err)
		}
	},
	// Switched, the loop does not go on, and the sandbox says why: the
	// hook keeps its state in the project's .claude folder, which the
	// hook sandbox keeps read-only even with --allow-write workspace
	// (a protected path: "rm: cannot remove
	// '.claude/ralph-loop.local.md': Read-only file system"), and reads
	// the session's transcript in Claude Code's home, which the sandbox
	// does not show it. The hook fails (exit 1, which Claude Code takes
	// as a non-blocking error), the model is asked once, and the state
	// file stays as it was.
	switched: func(t *testing.T, s *session, reqs []*claudetest.Request) {
		if len(reqs) != 1 {
			t.Errorf("switched: %d requests of the model, want 1 (the loop cannot go on in the sandbox)", len(reqs))
		}
		b, err := os.ReadFile(filepath.Join(s.proj, ".claude", "ralph-loop.local.md"))
		if err != nil || !strings.Contains(string(b), "iteration: 1\n") {
			t.Errorf("switched: the loop's state file changed (%v):\n%s", err, b)
		}
	},
}

// hookify's PreToolUse hook (hooks/pretooluse.py) reads the rules in
// the project's .claude/hookify.*.local.md; the test gives it the
// plugin's own example, examples/dangerous-rm.local.md, which blocks
// `rm -rf`. The model runs `rm -rf` on a folder of the project with
// Bash allowed: the hook denies the call, and the folder stays.
var hookify = &plugin{
	name: "hookify",
	parts: []string{
		`hook PreToolUse: command: python3 "${CLAUDE_PLUGIN_ROOT}/hooks/pretooluse.py"`,
		`hook PostToolUse: command: python3 "${CLAUDE_PLUGIN_ROOT}/hooks/posttooluse.py"`,
		`hook Stop: command: python3 "${CLAUDE_PLUGIN_ROOT}/hooks/stop.py"`,
		`hook UserPromptSubmit: command: python3 "${CLAUDE_PLUGIN_ROOT}/hooks/userpromptsubmit.py"`,
		"skills: writing-rules", "agents: conversation-analyzer", "commands: configure help hookify list",
	},
	prepare: func(t *testing.T, s *session) func(*claudetest.Request) claudetest.Reply {
		gemkittest.Tool(t, "python3", "python3") // the hooks'
		rule, err := os.ReadFile(filepath.Join(vendored, "hookify", "examples", "dangerous-rm.local.md"))
		if err != nil {
			t.Fatal(err)
		}
		gemkittest.WriteFile(t, filepath.Join(s.proj, ".claude", "hookify.dangerous-rm.local.md"), string(rule))
		gemkittest.WriteFile(t, filepath.Join(s.proj, "victim", "keep.txt"), "kept\n")
		s.allow = []string{"Bash"}
		return func(r *claudetest.Request) claudetest.Reply {
			if strings.Contains(r.Raw, `"tool_result"`) {
				return claudetest.Reply{Text: "Left it."}
			}
			return claudetest.Reply{Tool: "Bash", Input: map[string]any{"command": "rm -rf victim", "description": "Remove the victim folder"}}
		}
	},
	check: func(t *testing.T, s *session, reqs []*claudetest.Request) {
		if _, err := os.Stat(filepath.Join(s.proj, "victim", "keep.txt")); err != nil {
			t.Errorf("rm -rf ran: the PreToolUse hook did not block it (%v)", err)
		}
		if !answered(reqs, hookifyAnswer) {
			t.Errorf("the Bash call's result never said %q", hookifyAnswer)
		}
	},
}

// hookifyAnswer is what Claude Code gives the model for a call a
// PreToolUse hook denied without a reason (hookify gives its message as
// systemMessage, to the person).
const hookifyAnswer = "PreToolUse:Bash hook error: Blocked by hook"

// answered reports whether a request's last user turn holds text.
func answered(reqs []*claudetest.Request, text string) bool {
	for _, r := range reqs {
		if strings.Contains(r.LastUser(), text) {
			return true
		}
	}
	return false
}
