package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/proc"
)

// Published Gemini CLI extensions whose MCP servers run offline, built
// in the test's home as their manifests declare them, with the servers
// pinned from npm in interop/published (scripts/setup-and-test installs
// them). Their code is not in this repository: only the manifests' facts.

// toolboxManifest is gemini-cli-extensions/mcp-toolbox's
// gemini-extension.json as released: tag 0.7.1, commit
// 68d2d24efb47f45835c0361581b75f98e73ce70e. Its release archive puts
// MCP Toolbox for Databases' binary beside the manifest as `toolbox`.
// The repository's manifest at commit 0466f98 (named mcp-toolbox-devkit)
// starts the same binary through npm (`npx -y @toolbox-sdk/server@1.12.0
// --stdio`); the test puts the binary that package runs,
// @toolbox-sdk/server-linux-x64 1.12.0, where the released manifest looks
// for it, so the manifest runs as published.
const toolboxManifest = `{
  "name": "mcp-toolbox",
  "version": "0.7.1",
  "description": "Load custom tools using MCP Toolbox for Databases",
  "mcpServers": {
    "mcp_toolbox": {
      "command": "${extensionPath}${/}toolbox",
      "args": [
        "--stdio"
      ]
    }
  },
  "contextFileName": "MCP-TOOLBOX.md"
}
`

// toolboxContext is a line of the extension's context file, which the
// manifest names (contextFileName); the test writes its own.
const toolboxContext = "The workspace's tools.yaml names the database tools."

// toolboxMarker is the row the workspace's database holds.
const toolboxMarker = "toolbox-marker-4417"

// publishedModules is interop/published/node_modules, its links
// resolved: the extensions are copied from it into their own folders.
func publishedModules(t *testing.T, pkg string) string {
	t.Helper()
	src := filepath.Join(gemkittest.RepoRoot(t), "interop", "published", "node_modules")
	if _, err := os.Stat(filepath.Join(src, filepath.FromSlash(pkg))); err != nil {
		t.Fatalf("interop/published/node_modules lacks %s: run `npm install --no-save` in interop/published (%v)", pkg, err)
	}
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	return src
}

// linkToolbox installs the mcp-toolbox extension, switched to gemkit, and
// gives the workspace what the extension's context file asks of it: a
// tools.yaml in the folder Gemini CLI runs in, here with one SQL tool
// over a SQLite database beside it.
func linkToolbox(t *testing.T, f *fixture) {
	t.Helper()
	bin := filepath.Join(publishedModules(t, "@toolbox-sdk/server-linux-x64"), "@toolbox-sdk", "server-linux-x64", "bin", "toolbox")
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to write the test's SQLite database")
	}
	dir := filepath.Join(f.root, "src", "mcp-toolbox")
	writeFile(t, filepath.Join(dir, "MCP-TOOLBOX.md"), "# MCP Toolbox\n\n"+toolboxContext+"\n", 0o644)
	if out, err := exec.Command("cp", "--reflink=auto", bin, filepath.Join(dir, "toolbox")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f.link(t, "mcp-toolbox", toolboxManifest, nil)
	if out, err := f.gemkit("extensions", "sandbox", "mcp-toolbox"); err != nil || !strings.Contains(out, "Switched: Gemini CLI no longer starts mcp_toolbox") {
		t.Fatalf("gemkit extensions sandbox mcp-toolbox: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(f.ws, "tools.yaml"), `sources:
  notes:
    kind: sqlite
    database: notes.db
tools:
  list_notes:
    kind: sqlite-sql
    source: notes
    description: Lists the project's notes.
    statement: SELECT body FROM notes;
`, 0o644)
	script := "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute('CREATE TABLE notes (body TEXT)')\nc.execute('INSERT INTO notes VALUES (?)', (sys.argv[2],))\nc.commit()\n"
	if out, err := exec.Command(python, "-c", script, filepath.Join(f.ws, "notes.db"), toolboxMarker).CombinedOutput(); err != nil {
		t.Fatalf("writing notes.db: %v\n%s", err, out)
	}
}

// TestGeminiCLIPublishedToolbox: the real Gemini CLI 0.61, offline
// against the scripted model, with the published mcp-toolbox extension
// switched to gemkit. The model calls the workspace's SQL tool through
// gemkit mcp; the toolbox binary, in the sandbox, reads the workspace's
// tools.yaml and database under the default profile (read the
// workspace, write nothing, no network), and the row reaches the model.
// Gemini CLI starts no toolbox of its own: the one seen is gemkit's; and
// it still loads the extension's context file.
func TestGeminiCLIPublishedToolbox(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Gemini CLI 0.61 and the toolbox binary from npm")
	f := newFixture(t)
	linkToolbox(t, f)
	name := "mcp_gemkit_mcp-toolbox_list_notes"
	run := runSwitchedGemini(t, f, "mcp-toolbox/toolbox", "List the project's notes.",
		fakemodel.Call(name, map[string]any{}),
		fakemodel.Text("All done."),
	)
	// Gemini CLI calls its own copy's tool mcp_toolbox_list_notes: the
	// server's name already begins with "mcp_".
	run.wantOffered(t, name, "mcp_toolbox_")
	run.wantAnswer(t, 1, name, toolboxMarker)
	run.wantContext(t, toolboxContext)
	run.wantOneSandboxed(t)
}

// TestClaudeCodePublishedToolbox: the real Claude Code, through the same
// `gemkit mcp` entry, calls the published mcp-toolbox extension's tool;
// the toolbox runs once, in the sandbox, and the workspace's row reaches
// the model.
func TestClaudeCodePublishedToolbox(t *testing.T) {
	t.Parallel()
	gemkittest.SkipShort(t, "the real Claude Code and the toolbox binary from npm")
	claude := claudetest.Binary(t)
	f := newFixture(t)
	linkToolbox(t, f)
	oneSandboxed(t, runSwitchedClaude(t, f, claude, "mcp-toolbox/toolbox", claudeCall{"mcp__gemkit__mcp-toolbox_list_notes", map[string]any{}, toolboxMarker}))
}

// calledBefore reports whether the model called tool earlier in the
// conversation r carries.
func calledBefore(r *claudetest.Request, tool string) bool {
	for _, m := range r.Messages {
		if m.Role == "assistant" && strings.Contains(string(m.Content), `"name":"`+tool+`"`) {
			return true
		}
	}
	return false
}

// geminiRun is what a run of the real Gemini CLI saw: the scripted
// model's turns and each server process of the run with its confinement.
type geminiRun struct {
	turns  []fakemodel.Request
	seen   map[string]string
	report string
}

// runSwitchedGemini runs the real Gemini CLI 0.61 headless in f's
// workspace, with gemkit mcp added the way the docs say (`gemini mcp add
// -s user --trust gemkit gemkit mcp`) to the person's settings, against
// a model that answers with script. Every process whose command line
// names proc is watched while it runs.
func runSwitchedGemini(t *testing.T, f *fixture, proc, prompt string, script ...fakemodel.Reply) *geminiRun {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	settings := filepath.Join(f.home, ".gemini", "settings.json")
	// The switch has written mcp.excluded; the rest is the person's.
	s := map[string]any{}
	if b, err := os.ReadFile(settings); err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("the settings the switch wrote: %v\n%s", err, b)
		}
	}
	s["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}}
	s["privacy"] = map[string]any{"usageStatisticsEnabled": false}
	s["general"] = map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true}
	b, _ := json.MarshalIndent(s, "", "  ")
	writeFile(t, settings, string(b), 0o600)
	cli := geminiJS(interop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	add := exec.CommandContext(ctx, node, cli, "mcp", "add", "-s", "user", "--trust", "gemkit", f.bin, "mcp")
	add.Dir, add.Env = f.ws, append(f.env(), "NO_COLOR=1", "CI=1", geminiOneProcess)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("gemini mcp add: %v\n%s", err, out)
	}
	model := scriptedModel(t, script...)

	run := &geminiRun{}
	stop := watchServers(f, proc)
	_, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, prompt), model)
	run.seen = stop()
	run.report = report()
	run.turns = wantTurns(t, model, len(script), runErr, report)
	return run
}

// wantOffered checks that the first request offers the tool served by
// gemkit and none of Gemini CLI's own copy of the server (own, the
// prefix Gemini CLI gives its tools).
func (r *geminiRun) wantOffered(t *testing.T, name, own string) {
	t.Helper()
	first, err := r.turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	names := " " + strings.Join(first.FunctionNames(), " ") + " "
	if !strings.Contains(names, " "+name+" ") {
		t.Errorf("Gemini CLI did not offer %s; it offered:%s", name, names)
	}
	if strings.Contains(names, " "+own) {
		t.Errorf("Gemini CLI offers the tools of its own, unconfined copy of the server:%s", names)
	}
}

// wantContext checks that Gemini CLI, the extension switched, still
// gives the model the extension's context file, with line in it.
func (r *geminiRun) wantContext(t *testing.T, line string) {
	t.Helper()
	first, err := r.turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.Text(), line) {
		t.Errorf("Gemini CLI no longer loads the switched extension's context file")
	}
}

// wantAnswer checks that request turn carries the answer of the call to
// name, with text in it.
func (r *geminiRun) wantAnswer(t *testing.T, turn int, name, text string) {
	t.Helper()
	g, err := r.turns[turn].Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !responseContains(g, name, text) {
		t.Errorf("request %d does not carry %s's answer with %q: %+v\n%s", turn+1, name, text, g.FunctionResponses(), r.report)
	}
}

// wantOneSandboxed checks that the run saw one server process, inside
// gemkit's sandbox.
func (r *geminiRun) wantOneSandboxed(t *testing.T) {
	t.Helper()
	oneSandboxed(t, r.seen)
}

// watchServers watches, until stop is called, every process of this
// test's (a descendant of the test process: whatever the agent it runs
// starts, sandboxed or not) whose command line names proc, and says for
// each whether it runs inside gemkit's sandbox (bin); stop returns them
// by pid. A child of one seen is not another: between its fork and its
// exec it holds its parent's command line (a server starting its browser
// or a helper). Processes of other programs on the machine that name
// proc too (another run of the same server, another test's running
// beside this one) are not this test's: each process of f's has f's
// folders in its environment (ofFixture).
func watchServers(f *fixture, proc string) (stop func() map[string]string) {
	bin := f.bin
	self := strconv.Itoa(os.Getpid())
	seen := map[string]string{}
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, pid := range serverProcesses(proc) {
				if _, ok := seen[pid]; ok {
					continue
				}
				if !descends(pid, self) || !ofFixture(pid, f.root) {
					continue
				}
				if _, forked := seen[statusField(pid, "PPid")]; !forked {
					if how, ok := confinement(pid, bin); ok {
						seen[pid] = how
					}
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() map[string]string {
		close(done)
		<-watched
		return seen
	}
}

// descends says whether the process pid descends from the process
// ancestor; false once pid is gone.
func descends(pid, ancestor string) bool {
	for n := 0; pid != "" && pid != "0" && n < 32; n++ {
		if pid == ancestor {
			return true
		}
		pid = statusField(pid, "PPid")
	}
	return false
}

// ofFixture says whether process pid belongs to the fixture whose folders
// lie in root: its environment names them (its HOME, or the data folder
// gemkit gives a sandboxed server), whatever its command line says (a
// Node server may set its title over it). A process gone is no one's.
func ofFixture(pid, root string) bool {
	env, err := proc.Environ(atoi(pid))
	return err == nil && slices.ContainsFunc(env, func(kv string) bool { return strings.Contains(kv, root) })
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// statusField is the field name of /proc/<pid>/status, "" when the
// process is gone.
func statusField(pid, name string) string {
	b, _ := os.ReadFile(filepath.Join("/proc", pid, "status"))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// oneSandboxed checks that seen holds one server process, inside gemkit's
// sandbox.
func oneSandboxed(t *testing.T, seen map[string]string) {
	t.Helper()
	allSandboxed(t, seen, 1)
}

// allSandboxed checks that seen holds n server processes, each inside
// gemkit's sandbox.
func allSandboxed(t *testing.T, seen map[string]string, n int) {
	t.Helper()
	if len(seen) != n {
		t.Errorf("%d server processes in the run, want %d (gemkit's): %v", len(seen), n, seen)
	}
	for pid, how := range seen {
		if how != "sandboxed" {
			t.Errorf("server process %s is not inside gemkit's sandbox: %s", pid, how)
		}
	}
}

// claudeCall is a call the scripted model of runSwitchedClaude makes,
// and the text its answer must bring the model ("" for a call made only
// for what it does, such as opening a page).
type claudeCall struct {
	tool  string
	input map[string]any
	want  string
}

// runSwitchedClaude runs the real Claude Code with `gemkit mcp` as its one
// MCP server. The model makes calls in turn, each tool loaded with
// ToolSearch first, and ends once it made them all; the test fails
// unless each call's answer brought the model its want. It returns each
// process whose command line names proc, seen while Claude Code ran, with
// its confinement (watchServers).
func runSwitchedClaude(t *testing.T, f *fixture, claude, proc string, calls ...claudeCall) map[string]string {
	t.Helper()
	const done = "The tools answered."
	model := claudetest.StartModel(t, func(r *claudetest.Request) claudetest.Reply {
		for _, c := range calls {
			switch {
			case calledBefore(r, c.tool):
				continue
			case r.HasTool(c.tool):
				return claudetest.Reply{Tool: c.tool, Input: c.input}
			default:
				return claudetest.LoadTool(c.tool)
			}
		}
		return claudetest.Reply{Text: done}
	})
	env := claudetest.Home(t, filepath.Join(f.root, "claude"), model, gemkittest.ClosedPort(t), f.ws)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := f.headlessClaude(ctx, claude, f.claudeConfig(t, "--code-intel=false"), "Use the tools.", env)
	stop := watchServers(f, proc)
	out, err := cmd.CombinedOutput()
	seen := stop()
	if err != nil || !strings.Contains(string(out), done) {
		var last string
		if reqs := model.Requests(); len(reqs) > 0 {
			last = reqs[len(reqs)-1].LastUser()
		}
		t.Fatalf("claude -p: %v\n%s\nthe model's last input: %s", err, out, last)
	}
	for _, c := range calls {
		reached := c.want == ""
		for _, r := range model.Requests() {
			reached = reached || strings.Contains(r.LastUser(), c.want)
		}
		if !reached {
			t.Errorf("%s's answer never brought the model %q (%d requests)", c.tool, c.want, len(model.Requests()))
		}
	}
	return seen
}
