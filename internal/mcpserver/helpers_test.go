package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// TestMain lets this test binary serve as its own sandbox child, so the
// in-process tests can start tools, and removes the built gemkit.
func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(gemkittest.Main(m))
}

// fixture is a private home and workspace with the demo extensions
// linked, their consent recorded (except where a test voids it).
type fixture struct {
	bin, root, home, ws string
	// tmp, when set, is the temporary folder (TMPDIR) of the processes
	// the test starts, in place of one under root.
	tmp string
	// user, when set, runs the processes the test starts (gemkit's, and
	// those asUser wraps) as that user (asUnprivileged).
	user []string
}

// asUser makes cmd run as the fixture's user, when it has one.
func (f *fixture) asUser(cmd *exec.Cmd) *exec.Cmd {
	if len(f.user) == 0 {
		return cmd
	}
	cmd.Args = append(append(append([]string(nil), f.user...), cmd.Path), cmd.Args[1:]...)
	cmd.Path = f.user[0]
	return cmd
}

// demoManifest is an extension with a tool of each outcome: success with
// JSON, failure, a write the sandbox refuses, and a slow one to cancel;
// demoFiles add a doc and an agent skill.
const demoManifest = `{"name": "demo", "version": "1.0.0", "description": "Tools for the MCP tests.",
 "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [
  {"name": "count", "description": "Repeats a word.", "executable": "tools/count.sh", "runtime": "shell", "output": "json",
   "args": [{"name": "word", "type": "string", "description": "The word."}, {"name": "times", "type": "integer"}]},
  {"name": "fail", "description": "Always fails.", "executable": "tools/fail.sh", "runtime": "shell"},
  {"name": "write", "description": "Tries to write into the workspace.", "executable": "tools/write.sh", "runtime": "shell"},
  {"name": "slow", "description": "Sleeps for a minute.", "executable": "tools/slow.sh", "runtime": "shell"}],
 "docs": [{"name": "guide", "description": "How the demo tools work.", "file": "docs/guide.md"}],
 "examples": [{"prompt": "say hi twice", "tool_call": "count(word: \"hi\", times: 2)"}]}`

const guideText = "# Demo guide\n\nThe count tool repeats a word.\n"

// triageBody is the triage skill's instructions: its SKILL.md without the
// front matter.
const triageBody = "# Triage\n\nLabel each report P0 to P3, most urgent first."

var demoFiles = map[string]string{
	"tools/count.sh":         `printf '{"word":"%s","times":%s,"files":"%s"}\n' "$2" "$4" "$(ls)"` + "\n",
	"tools/fail.sh":          "echo 'the input is broken' >&2; exit 4\n",
	"tools/write.sh":         "echo data > \"$PWD/written.txt\" || exit 3\n",
	"tools/slow.sh":          "sleep 6017\n",
	"docs/guide.md":          guideText,
	"skills/triage/SKILL.md": "---\nname: triage\ndescription: Sort incoming bug reports by severity.\n---\n\n" + triageBody + "\n",
}

// gatedManifest's permissions are changed after linking, which voids the
// consent given then: its tools have no consent.
const gatedManifest = `{"name": "gated", "version": "1.0.0", "description": "Needs consent.",
 "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [{"name": "hello", "description": "Says hello.", "executable": "tools/hello.sh", "runtime": "shell"}]}`

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return fixtureWith(t, gemkittest.Gemkit(t))
}

// fixtureWith is newFixture with gemkit's binary bin, or with none (""):
// the extensions are then linked in this process (linkInProcess), for
// tests that run gemkit mcp in memory.
func fixtureWith(t *testing.T, bin string) *fixture {
	t.Helper()
	f := &fixture{bin: bin, root: t.TempDir()}
	f.home = filepath.Join(f.root, "home")
	f.ws = filepath.Join(f.home, "ws") // user-scope enablement covers the home folder and below
	for _, d := range []string{f.home, f.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("A"), 0o644)
	f.link(t, "demo", demoManifest, demoFiles)
	src := f.link(t, "gated", gatedManifest, map[string]string{"tools/hello.sh": "echo hello\n"})
	writeFile(t, filepath.Join(src, "gemini-extension.json"), strings.Replace(gatedManifest, `"read": "workspace"`, `"read": "home"`, 1), 0o644)
	return f
}

// link writes an extension's source folder and links it with consent;
// it returns the folder.
func (f *fixture) link(t *testing.T, name, manifest string, files map[string]string) string {
	t.Helper()
	src := filepath.Join(f.root, "src", name)
	writeFile(t, filepath.Join(src, "gemini-extension.json"), manifest, 0o644)
	for rel, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(rel, "tools/") {
			mode = 0o755
		}
		writeFile(t, filepath.Join(src, filepath.FromSlash(rel)), body, mode)
	}
	if f.bin == "" {
		f.linkInProcess(t, src)
		return src
	}
	if out, err := f.gemkit("extensions", "link", "--consent", src); err != nil {
		t.Fatalf("link %s: %v\n%s", name, err, out)
	}
	return src
}

// linkInProcess links the extension in src with consent, as `gemkit
// extensions link --consent` does (internal/cli, newExtLinkCmd): with
// the folders others may write known to the consent, and the agreed
// copy of an extension whose servers gemkit runs kept.
func (f *fixture) linkInProcess(t *testing.T, src string) {
	t.Helper()
	st := extmcp.Policy{Store: extension.OpenStore(f.home), Home: f.home}.WithWritable()
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	in, err := st.Link(context.Background(), src, yes)
	if err != nil {
		t.Fatalf("link %s: %v", src, err)
	}
	if len(extension.SandboxedServers(in.Manifest())) > 0 {
		if _, err := st.KeepAgreedCopy(context.Background(), in.Extension); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

// env is the environment every process of the fixture gets: its own
// HOME, nothing of the developer's gemini set-up.
func (f *fixture) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "GEMINI_CLI_HOME" || k == "TMPDIR" || strings.HasPrefix(k, "GEMINI_") || strings.HasPrefix(k, "GOOGLE_") || k == "GEMKIT_MCP_TOKEN" {
			continue
		}
		env = append(env, kv)
	}
	tmp := f.tmp
	if tmp == "" {
		tmp = filepath.Join(f.root, "tmp")
		os.MkdirAll(tmp, 0o755)
	}
	return append(env, "HOME="+f.home, "TMPDIR="+tmp, "LANG=C.UTF-8")
}

func (f *fixture) gemkit(args ...string) (string, error) {
	cmd := f.asUser(exec.Command(f.bin, args...))
	cmd.Dir = f.ws
	cmd.Env = f.env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sdkClient is interop/mcp-client.mjs: the TypeScript SDK's MCP client.
type sdkClient struct {
	t            *testing.T
	cmd          *exec.Cmd
	in           io.WriteCloser
	out          *bufio.Reader
	stderr       *bytes.Buffer
	instructions string
	mu           sync.Mutex
}

// startClient runs the SDK client with args (see mcp-client.mjs) and
// waits for it to connect.
func startClient(t *testing.T, f *fixture, extraEnv []string, args ...string) *sdkClient {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/sdk/package.json")
	cmd := exec.Command(node, append([]string{"mcp-client.mjs"}, args...)...)
	cmd.Dir = interop
	cmd.Env = append(f.env(), extraEnv...)
	c := &sdkClient{t: t, cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	var err error
	if c.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReaderSize(stdout, 1<<20)
	// The client runs gemkit with the workspace as its folder.
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.in.Close()
		waitOrKill(cmd)
	})
	line, err := c.readLine(60 * time.Second)
	if err != nil {
		t.Fatalf("the SDK client did not connect: %v\nstderr:\n%s", err, c.stderr.String())
	}
	ready, ok := strings.CutPrefix(line, "READY ")
	if !ok {
		t.Fatalf("unexpected first line %q\nstderr:\n%s", line, c.stderr.String())
	}
	var r struct{ Instructions string }
	json.Unmarshal([]byte(ready), &r)
	c.instructions = r.Instructions
	return c
}

// waitOrKill waits for cmd to end after it was told to, killing it after
// ten seconds.
func waitOrKill(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

func (c *sdkClient) readLine(timeout time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := c.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(timeout):
		c.cmd.Process.Kill()
		return "", io.ErrNoProgress
	}
}

// do sends one request and decodes the result into v; it fails the test
// on an error answer.
func (c *sdkClient) do(req map[string]any, v any) {
	c.t.Helper()
	if err := c.try(req, v); err != nil {
		c.t.Fatalf("%v: %v\nclient stderr:\n%s", req, err, c.stderr.String())
	}
}

func (c *sdkClient) try(req map[string]any, v any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(req)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		return err
	}
	line, err := c.readLine(2 * time.Minute)
	if err != nil {
		return err
	}
	var ans struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &ans); err != nil {
		return err
	}
	if !ans.OK {
		return &clientError{ans.Error}
	}
	if v != nil {
		return json.Unmarshal(ans.Result, v)
	}
	return nil
}

type clientError struct{ msg string }

func (e *clientError) Error() string { return e.msg }

// toolResult is an MCP CallToolResult.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError           bool           `json:"isError"`
	StructuredContent map[string]any `json:"structuredContent"`
}

// sleepers counts the processes running "sleep 6017", the slow tool.
func sleepers() int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range dirs {
		b, _ := os.ReadFile(p)
		if string(b) == "sleep\x006017\x00" {
			n++
		}
	}
	return n
}

// call calls a tool and returns its result.
func (c *sdkClient) call(req map[string]any) toolResult {
	c.t.Helper()
	var r toolResult
	c.do(req, &r)
	return r
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// pinnedPeer returns the file rel in interop/DIR/node_modules, an npm
// folder that pins a real peer apart from interop/'s own; when it is
// missing it fails naming the step of scripts/setup-and-test that
// installs it, the npm command install run in that folder. Under -short
// it skips, naming the peer.
func pinnedPeer(t *testing.T, dir, install, peer, rel string) string {
	t.Helper()
	gemkittest.SkipShort(t, peer)
	p := filepath.Join(gemkittest.RepoRoot(t), "interop", dir, "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed: run `%s` in interop/%s, as scripts/setup-and-test does (%v)", peer, install, dir, err)
	}
	return p
}

// geminiJS is Gemini CLI 0.61's bundle in interop (gemkittest.Interop).
func geminiJS(interop string) string {
	return filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
}

// headlessGemini is Gemini CLI run as a script runs it (gemini -p prompt
// --yolo) in f's workspace, against the scripted model at modelURL with
// a test key, offline (real-peers-offline.md), in one process
// (geminiOneProcess). env comes after f's environment: a variable named
// again there wins.
func (f *fixture) headlessGemini(ctx context.Context, node, interop, modelURL, prompt string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, node, geminiJS(interop), "-p", prompt, "--yolo")
	cmd.Dir = f.ws
	cmd.Env = append(append(f.env(), "GOOGLE_GEMINI_BASE_URL="+modelURL, "GEMINI_API_KEY=test-key", "NO_COLOR=1", "CI=1", geminiOneProcess), env...)
	return cmd
}

// claudeConfig writes a Claude Code --mcp-config whose one server is
// gemkit mcp of f (args, then f's workspace; f's home) and returns its
// path.
func (f *fixture) claudeConfig(t *testing.T, args ...string) string {
	t.Helper()
	cfg := filepath.Join(f.root, "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"gemkit": map[string]any{
		"command": f.bin, "args": append(append([]string{"mcp"}, args...), "--workspace", f.ws), "env": map[string]string{"HOME": f.home}}}})
	writeFile(t, cfg, string(b), 0o644)
	return cfg
}

// headlessClaude is Claude Code run as a script runs it (claude -p
// prompt) in f's workspace with the MCP servers of cfg alone
// (claudeConfig), gemkit's tools allowed, and env (claudetest.Home's).
func (f *fixture) headlessClaude(ctx context.Context, claude, cfg, prompt string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, claude, "-p", "--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__gemkit", "--", prompt)
	cmd.Dir = f.ws
	cmd.Env = append(f.env(), env...)
	return cmd
}

// scriptedModel starts a model that plays script, closed when the test
// ends.
func scriptedModel(t *testing.T, script ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	model, err := fakemodel.Start(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	return model
}

// wantTurns fails t unless a headless run (runHeadless) ended well and
// its model was asked want times, showing report; it returns the turns.
func wantTurns(t *testing.T, model *fakemodel.Server, want int, runErr error, report func() string) []fakemodel.Request {
	t.Helper()
	if runErr != nil {
		t.Fatalf("gemini: %v\n%s", runErr, report())
	}
	turns := model.Turns()
	if len(turns) != want {
		t.Fatalf("%d model turns, want %d\n%s", len(turns), want, report())
	}
	return turns
}

// runHeadless runs a headless agent's command (gemini -p) against model
// and returns its stdout and what a failure shows: the requests the
// model got, and the command's stdout and stderr.
func runHeadless(cmd *exec.Cmd, model *fakemodel.Server) (out string, report func() string, err error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String(), func() string {
		var b strings.Builder
		for _, r := range model.Requests() {
			b.WriteString(r.Method + " " + r.Path + "\n")
		}
		return "requests:\n" + b.String() + "stdout:\n" + stdout.String() + "\nstderr:\n" + stderr.String()
	}, err
}

// allowHosts lets gemkit mcp reach the loopback servers of urls for the
// extension ext (gemkit extensions sandbox ext --allow-host HOST:PORT):
// gemkit reaches an address of this computer for an extension's remote
// server only when the person allowed that host and port by name. An
// extension with a stdio server is switched by it too.
func (f *fixture) allowHosts(t *testing.T, ext string, urls ...string) string {
	t.Helper()
	args := []string{"extensions", "sandbox", ext}
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--allow-host", p.Host)
	}
	out, err := f.gemkit(args...)
	if err != nil {
		t.Fatalf("gemkit %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// geminiOneProcess, in the environment of the real Gemini CLI, has it
// run in its first process: its launcher (bundle/gemini.js, run())
// otherwise starts a second node, with this very variable set
// (getSpawnConfig) and a larger heap, which loads the whole bundle and
// runs the command. The command's code is the same either way, at less
// CPU: `gemini extensions list` 1.8 s against 3.3 s, a headless session
// (gemini -p) 0.8 s less. What the launcher adds is the heap bound, an
// IPC channel for remote admin settings and a restart on exit code 199
// (the terminal interface's, after folder trust): none of it reaches
// gemkit. The set-up and listing commands (mcp add, mcp list,
// extensions ...) and the headless sessions (headlessGemini) run so. The
// sessions of TestGeminiCLISetUp, the terminal interface and gemini -p
// started by the person's own `gemini`, keep the launcher, as a
// person's do, and so do the editors' tests, where Gemini CLI's IDE mode
// finds the editor by walking up its own process tree.
const geminiOneProcess = "GEMINI_CLI_NO_RELAUNCH=true"

// serverFixture is extmcp's MCP server fixture (testdata/fixture.mjs),
// the program of the extensions' servers these tests switch and serve.
func serverFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "extmcp", "testdata", "fixture.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
