package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// serversManifest starts two real npm servers (interop/mcp-servers),
// shipped in the extension's folder as a published extension ships its
// server; server-memory keeps its file in its HOME, the data folder.
const serversManifest = `{"name": "realmcp", "version": "1.0.0", "description": "Real MCP servers.",
 "mcpServers": {
  "memory": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-memory/dist/index.js"],
             "env": {"MEMORY_FILE_PATH": "$HOME/memory.jsonl"}},
  "everything": {"command": "node", "args": ["${extensionPath}/node_modules/@modelcontextprotocol/server-everything/dist/index.js"]},
  "remote": {"httpUrl": "http://127.0.0.1:9/mcp"}
 }}`

// TestExtensionServers: `gemkit mcp`, to the go-sdk client, starts an
// extension's own servers at the first tools/list (not at initialize),
// serves their tools as realmcp_<tool> beside the extensions' tools,
// passes calls on, and leaves nothing running once the client goes.
func TestExtensionServers(t *testing.T) {
	t.Parallel()
	src := filepath.Join(gemkittest.RepoRoot(t), "interop", "mcp-servers", "node_modules")
	if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-memory")); err != nil {
		t.Fatalf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%v)", err)
	}
	// A checkout may link node_modules to another's: copy what it names,
	// since the link would lead out of the extension's folder.
	if real, err := filepath.EvalSymlinks(src); err == nil {
		src = real
	}
	f := newFixture(t)
	dir := filepath.Join(f.root, "src", "realmcp")
	writeFile(t, filepath.Join(dir, "README.md"), "Real MCP servers.\n", 0o644)
	if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	f.link(t, "realmcp", serversManifest, nil)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	var progress []string
	// threeProgress is closed when the third progress notification is in.
	threeProgress := make(chan struct{})
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1",
		Progress: func(token any, p, _ float64, _ string) {
			mu.Lock()
			progress = append(progress, fmt.Sprint(token, " ", p))
			if len(progress) == 3 {
				close(threeProgress)
			}
			mu.Unlock()
		}}, "--extension-servers")
	c, stderr, in, cmd := run.c, run.stderr, run.stdin, run.cmd
	if n := len(serverProcesses(dir)); n != 0 {
		t.Errorf("%d server processes run after initialize alone", n)
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr.String())
	}
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"realmcp_echo", "realmcp_create_entities", "realmcp_read_graph", "demo_count", "read_doc"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s: %v\n%s", want, names, stderr.String())
		}
	}
	if n := len(serverProcesses(dir)); n == 0 {
		t.Error("no server process runs after tools/list")
	}
	res, err := c.CallTool(ctx, "realmcp_echo", map[string]any{"message": "through gemkit"})
	if err != nil || res.IsError || !strings.Contains(res.Text("\n"), "through gemkit") {
		t.Errorf("realmcp_echo: %+v %v", res, err)
	}
	res, err = c.CallTool(ctx, "realmcp_create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{"kept"}}}})
	if err != nil || res.IsError {
		t.Errorf("realmcp_create_entities: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(f.home, ".local", "share", "gemkit", "extension-data", "realmcp", "memory.jsonl")); err != nil {
		t.Errorf("server-memory's file is not in the data folder: %v", err)
	}

	// The server's progress reaches the client under the client's token.
	if _, err := c.CallToolRaw(ctx, "realmcp_trigger-long-running-operation", json.RawMessage(`{"duration":0.3,"steps":3}`), "tok-1"); err != nil {
		t.Errorf("realmcp_trigger-long-running-operation: %v", err)
	}
	// A notification may arrive just after the result it went before.
	got := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(progress, ",") }
	select {
	case <-threeProgress:
	case <-time.After(30 * time.Second):
	}
	if p := got(); p != "tok-1 1,tok-1 2,tok-1 3" {
		t.Errorf("progress %v, want tok-1 1, 2, 3", p)
	}

	// The client goes: gemkit mcp ends, and every server with it.
	c.Close()
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("gemkit mcp did not end when its client went")
	}
	// Other processes' ends are seen only by reading /proc.
	if !gemkittest.Poll(30*time.Second, 50*time.Millisecond, func() bool { return len(serverProcesses(dir)) == 0 }) {
		t.Fatalf("server processes left 30 s after the client went: %v", serverProcesses(dir))
	}
}

// serverProcesses lists the pids whose command line names dir. The
// tests' watches (watchServers) call it every 25 ms, and it was half of
// the test binary's own CPU in internal/mcpserver's race run: it reads
// each command line with bare system calls into one buffer (three calls
// a process, against os.ReadFile's six and its allocations).
func serverProcesses(dir string) []string {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []string
	want := []byte(dir)
	buf := make([]byte, 8192)
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue // not a process
		}
		b := readCmdline(name, buf)
		if bytes.Contains(b, want) {
			out = append(out, name)
		}
		if cap(b) > len(buf) {
			buf = b[:cap(b)] // grown for a long command line
		}
	}
	return out
}

// readCmdline reads /proc/<pid>/cmdline into buf, which it returns
// resliced (or grown); nil when the process is gone.
func readCmdline(pid string, buf []byte) []byte {
	fd, err := syscall.Open("/proc/"+pid+"/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil
		}
		if m == 0 {
			return buf[:n]
		}
		n += m
	}
}

// TestExtensionServersNeedConsent: gemkit mcp starts no server of an
// extension switched to gemkit without the person's consent to it as it
// is now, and says why in its log; consent given while the client is
// connected brings the server's tools, without a restart.
func TestExtensionServersNeedConsent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fixture := serverFixture(t)
	f.link(t, "unagreed", `{"name": "unagreed", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`, map[string]string{"fixture.mjs": fixture})
	for _, args := range [][]string{{"extensions", "sandbox", "unagreed"}, {"extensions", "consent", "unagreed", "--revoke"}} {
		if out, err := f.gemkit(args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	c, stderr, in, cmd := run.c, run.stderr, run.stdin, run.cmd
	served := func() bool {
		tools, err := c.ListTools(ctx)
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, stderr.String())
		}
		for _, tl := range tools {
			if tl.Name == "unagreed_ok" {
				return true
			}
		}
		return false
	}
	if served() {
		t.Error("a tool of the server without consent is served")
	}
	// gemkit mcp's stderr reaches the buffer through a pipe, maybe after
	// the answer to tools/list.
	if want := "extension unagreed's MCP server srv is not started: you have not agreed to the extension unagreed as it is now"; !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(stderr.String(), want) }) {
		t.Errorf("the log does not say %q:\n%s", want, stderr.String())
	}
	if out, err := f.gemkit("extensions", "consent", "unagreed", "--grant"); err != nil {
		t.Fatalf("consent --grant: %v\n%s", err, out)
	}
	// Polls the tool list, as a client that heard list_changed would.
	if !gemkittest.Poll(20*time.Second, 100*time.Millisecond, served) {
		t.Fatalf("the server's tools are not served 20 s after consent was given\n%s", stderr.String())
	}
	c.Close()
	in.Close()
	cmd.Wait()
}

// startListed is startMCP without options, whose tools are listed:
// the caller ends the run (end) when it is done with it.
func (f *fixture) startListed(t *testing.T, ctx context.Context) (run *mcpRun, tools []mcpclient.Tool, end func()) {
	t.Helper()
	run = f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"})
	end = func() { run.c.Close(); run.stdin.Close(); run.cmd.Wait() }
	tools, err := run.c.ListTools(ctx)
	if err != nil {
		end()
		t.Fatalf("tools/list: %v\n%s", err, run.stderr.String())
	}
	return run, tools, end
}

// mcpRun is a `gemkit mcp` of a fixture and a client of it.
type mcpRun struct {
	c      *mcpclient.Client
	stderr *gemkittest.Output
	stdin  io.WriteCloser
	cmd    *exec.Cmd
}

// startMCP starts `gemkit mcp --code-intel=false` with args in the
// fixture's workspace, with the fixture's environment (as its user,
// when it has one), and connects to
// it with o within ctx; the process is killed when the test ends.
func (f *fixture) startMCP(t *testing.T, ctx context.Context, o mcpclient.Options, args ...string) *mcpRun {
	t.Helper()
	cmd := f.asUser(exec.Command(f.bin, append([]string{"mcp", "--code-intel=false"}, args...)...))
	cmd.Dir, cmd.Env = f.ws, f.env()
	r := &mcpRun{stderr: &gemkittest.Output{}, cmd: cmd}
	cmd.Stderr = r.stderr
	r.stdin, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c, err := mcpclient.Stdio(ctx, out, r.stdin, o)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, r.stderr.String())
	}
	r.c = c
	return r
}

// TestExtensionServerFilesBound: a server whose script has another name
// on disk (a hard link, as pnpm's store makes) is not started, since a
// program writing that other name would change the code after the
// person agreed: the switch and consent --grant refuse in words naming
// the file and what to do, and gemkit mcp --extension-servers serves a
// placeholder in the server's place that says the same, and the log
// too.
func TestExtensionServerFilesBound(t *testing.T) {
	f := newFixture(t)
	fixture := serverFixture(t)
	src := f.link(t, "linked", `{"name": "linked", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`, map[string]string{"fixture.mjs": fixture})
	if err := os.Link(filepath.Join(src, "fixture.mjs"), filepath.Join(f.root, "store-fixture.mjs")); err != nil {
		t.Fatal(err)
	}
	want := "this file has another name on disk (a hard link, such as a build step's ln or pnpm's store makes): fixture.mjs"
	for _, args := range [][]string{{"extensions", "sandbox", "linked"}, {"extensions", "consent", "linked", "--grant"}} {
		if out, err := f.gemkit(args...); err == nil || !strings.Contains(out, want) || strings.Contains(out, "Switched") || strings.Contains(out, "Consent given") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
	// The copy link --consent kept, of the folder as agreed to (before
	// the second name), would run: its file has one name. Without one
	// (a consent older than the copies), the folder is checked.
	if err := os.RemoveAll(filepath.Join(f.home, ".local", "share", "gemkit", "agreed")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := f.startMCP(t, ctx, mcpclient.Options{Name: "test", Version: "1"}, "--extension-servers")
	tools, err := run.c.ListTools(ctx)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, run.stderr.String())
	}
	var placeholder mcpclient.Tool
	for _, tl := range tools {
		switch {
		case tl.Name == "linked_srv_unavailable":
			placeholder = tl
		case strings.HasPrefix(tl.Name, "linked_"):
			t.Errorf("a tool of a server whose script has another name is served: %s", tl.Name)
		}
	}
	if !strings.Contains(placeholder.Description, want) {
		t.Errorf("the placeholder's description does not say %q: %+v", want, placeholder)
	}
	if res, err := run.c.CallTool(ctx, "linked_srv_unavailable", nil); err != nil || !res.IsError || !strings.Contains(res.Text(""), want) {
		t.Errorf("the placeholder's answer: %+v %v", res, err)
	}
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool { return strings.Contains(run.stderr.String(), want) }) {
		t.Errorf("the log does not say %q:\n%s", want, run.stderr.String())
	}
	run.c.Close()
	run.stdin.Close()
	run.cmd.Wait()
}

// TestExtensionServerRunsAsAgreed: the switch keeps gemkit's copy of
// the extension as the person agreed to it, and gemkit mcp runs the
// server from it, at the extension's own path: a file of the extension
// edited since is not what the server reads, until the person agrees
// to the change; the server's folder stays read-only to it. A manifest
// edited since is not served at all.
func TestExtensionServerRunsAsAgreed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fixture := serverFixture(t)
	const manifest = `{"name": "asagreed", "version": "1.0.0",
 "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/fixture.mjs"]}}}`
	src := f.link(t, "asagreed", manifest, map[string]string{"fixture.mjs": fixture, "version.txt": "v1\n"})
	if out, err := f.gemkit("extensions", "sandbox", "asagreed"); err != nil {
		t.Fatalf("switch: %v\n%s", err, out)
	}
	version := filepath.Join(src, "version.txt")
	os.WriteFile(version, []byte("v2\n"), 0o644)

	read := func(want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		run, _, end := f.startListed(t, ctx)
		defer end()
		res, err := run.c.CallTool(ctx, "asagreed_read", map[string]any{"path": version})
		if err != nil || res.IsError || res.Text("\n") != want {
			t.Errorf("the server read %s as %+v (%v), want %q\n%s", version, res, err, want, run.stderr.String())
		}
		res, err = run.c.CallTool(ctx, "asagreed_write", map[string]any{"path": version})
		if err != nil || !res.IsError {
			t.Errorf("the server wrote its own folder: %+v (%v)", res, err)
		}
	}
	read("v1\n")
	if out, err := f.gemkit("extensions", "consent", "asagreed", "--grant"); err != nil {
		t.Fatalf("consent --grant: %v\n%s", err, out)
	}
	read("v2\n")

	// The manifest the servers' commands come from changes: nothing of
	// the copy runs under it.
	writeFile(t, filepath.Join(src, "gemini-extension.json"), manifest+"\n", 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, tools, end := f.startListed(t, ctx)
	defer end()
	for _, tl := range tools {
		if tl.Name == "asagreed_read" {
			t.Errorf("a server of a manifest changed since consent is served:\n%s", run.stderr.String())
		}
	}
}
