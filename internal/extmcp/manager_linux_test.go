package extmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/proc"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// The servers come from interop/mcp-servers (pinned in its
// package.json; scripts/setup-and-test installs them). An extension ships
// its server in its own folder, so each test's extension holds a copy.

var (
	serversOnce sync.Once
	serversDir  string
	serversErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{serversDir, widenDir} {
		if d != "" && !strings.HasSuffix(d, fmt.Sprintf("-%d", os.Getppid())) {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// extensionDir is a folder (world-readable, for the run as uid 65534)
// holding the npm servers' node_modules and testdata's fixture:
// /tmp/gemkit-extmcp-ext-<pid>, made by the test process; the run as uid
// 65534 (a child of it, without the repository) takes its parent's.
func extensionDir(t testing.TB) string {
	t.Helper()
	serversOnce.Do(func() {
		if parent := fmt.Sprintf("/tmp/gemkit-extmcp-ext-%d", os.Getppid()); os.Getuid() != 0 {
			if _, err := os.Stat(filepath.Join(parent, "fixture.mjs")); err == nil {
				serversDir = parent
				return
			}
		}
		src := filepath.Join(gemkittest.RepoRoot(t), "interop", "mcp-servers", "node_modules")
		if _, err := os.Stat(filepath.Join(src, "@modelcontextprotocol", "server-everything")); err != nil {
			serversErr = err
			return
		}
		// A checkout may link node_modules to another's: copy what it
		// names, since the link would lead out of the extension's folder.
		if real, err := filepath.EvalSymlinks(src); err == nil {
			src = real
		}
		dir := fmt.Sprintf("/tmp/gemkit-extmcp-ext-%d", os.Getpid())
		if serversErr = os.Mkdir(dir, 0o755); serversErr != nil {
			return
		}
		os.Chmod(dir, 0o755)
		serversDir = dir
		if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
			serversErr = fmt.Errorf("%v: %s", err, out)
			return
		}
		fixture, _ := os.ReadFile(filepath.Join("testdata", "fixture.mjs"))
		serversErr = os.WriteFile(filepath.Join(dir, "fixture.mjs"), fixture, 0o644)
	})
	if serversErr != nil {
		t.Fatalf("interop/mcp-servers/node_modules is needed: run `npm ci` in interop/mcp-servers (%v)", serversErr)
	}
	return serversDir
}

// setup is a manager of specs in a fresh workspace and home.
type setup struct {
	ext, ws, home string
	m             *extmcp.Manager
	log           *gemkittest.Output // what the manager logs
}

func newSetup(t testing.TB, timeout time.Duration) *setup {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node (>= 20) is needed")
	}
	s := &setup{ext: extensionDir(t), ws: t.TempDir(), home: t.TempDir(), log: &gemkittest.Output{}}
	l := &sandbox.Launcher{}
	t.Cleanup(func() { l.Close() })
	s.m = extmcp.NewManager(extmcp.Config{
		Launcher: l, Workspace: s.ws, Timeout: timeout, Idle: time.Minute,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, "SECRET_TOKEN=do-not-pass"},
		Logger:  slog.New(slog.NewTextHandler(s.log, nil)),
	})
	t.Cleanup(s.m.Close)
	return s
}

func (s *setup) script(pkg string) string {
	return filepath.Join(s.ext, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
}

func (s *setup) spec(server string, args ...string) extmcp.Spec {
	return extmcp.Spec{Extension: "realmcp", Server: server, Dir: s.ext, Command: "node", Args: args}
}

// call calls tool and returns its result's text and isError.
func call(t *testing.T, m *extmcp.Manager, sp extmcp.Spec, tool string, args any) (string, bool, error) {
	t.Helper()
	a, _ := json.Marshal(args)
	raw, err := m.Call(context.Background(), sp.Key(), tool, a, nil)
	if err != nil {
		return "", false, err
	}
	var res struct {
		Content []struct {
			Type, Text string
		}
		IsError bool
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, c.Text)
	}
	return strings.Join(texts, "\n"), res.IsError, nil
}

func toolNames(tools []extmcp.Tool, server string) map[string]bool {
	out := map[string]bool{}
	for _, t := range tools {
		if t.Spec.Server == server {
			out[t.Name] = true
		}
	}
	return out
}

// TestRealServers runs server-memory, server-filesystem and
// server-everything in the sandbox: their tools are listed and called,
// the workspace is read and not written, the data folder is the
// server's HOME and outlives it, and its environment is not the
// person's.
func TestRealServers(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 30*time.Second)
	mem := s.spec("memory", s.script("server-memory"))
	mem.Env = map[string]string{"MEMORY_FILE_PATH": "$HOME/memory.jsonl"}
	fs := s.spec("filesystem", s.script("server-filesystem"), s.ws)
	every := s.spec("everything", s.script("server-everything"))
	s.m.Sync([]extmcp.Spec{mem, fs, every})
	if err := os.WriteFile(filepath.Join(s.ws, "hello.txt"), []byte("hello from the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}

	tools, failed := s.m.Tools(context.Background())
	for _, f := range failed {
		t.Errorf("%s: %v", f.Spec.Server, f.Err)
	}
	for server, want := range map[string]string{"memory": "create_entities", "filesystem": "read_text_file", "everything": "echo"} {
		if !toolNames(tools, server)[want] {
			t.Errorf("server %s does not list %s: %v", server, want, toolNames(tools, server))
		}
	}

	if text, isErr, err := call(t, s.m, every, "echo", map[string]any{"message": "hi there"}); err != nil || isErr || !strings.Contains(text, "hi there") {
		t.Errorf("echo: %q %v %v", text, isErr, err)
	}
	if text, isErr, err := call(t, s.m, fs, "read_text_file", map[string]any{"path": filepath.Join(s.ws, "hello.txt")}); err != nil || isErr || !strings.Contains(text, "hello from the workspace") {
		t.Errorf("read_text_file: %q %v %v", text, isErr, err)
	}
	// Write nothing: the workspace is read-only to it.
	target := filepath.Join(s.ws, "written.txt")
	text, isErr, err := call(t, s.m, fs, "write_file", map[string]any{"path": target, "content": "x"})
	if err != nil || !isErr {
		t.Errorf("write_file in the workspace: %q %v %v, want a refusal", text, isErr, err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("the server wrote %s", target)
	}
	t.Logf("write_file refused: %s", text)

	// Its environment: the manifest's, HOME its data folder, no
	// variable of the person's.
	text, _, err = call(t, s.m, every, "get-env", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text, "do-not-pass") || strings.Contains(text, "SECRET_TOKEN") {
		t.Errorf("the person's environment reached the server: %s", text)
	}
	data := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "realmcp")
	if !strings.Contains(text, data) {
		t.Errorf("HOME is not the data folder %s: %s", data, text)
	}

	// The data folder is kept: what server-memory wrote is there when
	// it is started again.
	if text, isErr, err := call(t, s.m, mem, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{"sandboxes servers"}}}}); err != nil || isErr {
		t.Fatalf("create_entities: %q %v %v", text, isErr, err)
	}
	if _, err := os.Stat(filepath.Join(data, "memory.jsonl")); err != nil {
		t.Errorf("server-memory's file is not in its data folder: %v", err)
	}
	mem2 := mem
	mem2.Args = append([]string{"--no-warnings"}, mem.Args...) // a new spec: the old server is stopped
	s.m.Sync([]extmcp.Spec{mem2, fs, every})
	if text, isErr, err := call(t, s.m, mem2, "read_graph", map[string]any{}); err != nil || isErr || !strings.Contains(text, "sandboxes servers") {
		t.Errorf("read_graph after a restart: %q %v %v", text, isErr, err)
	}
}

// TestStateBesideScript: server-memory left to itself (no
// MEMORY_FILE_PATH) writes its graph beside its script, in the
// extension's folder, which is read-only to it: the call fails, and the
// refused write, named only by the server's error, is told to the
// person (with where a server keeps what it writes) and to the model.
func TestStateBesideScript(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the real server-memory under node in the sandbox: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	mem := s.spec("memory", s.script("server-memory"))
	s.m.Sync([]extmcp.Spec{mem})
	text, isErr, err := call(t, s.m, mem, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "gemkit", "entityType": "project", "observations": []string{"sandboxes servers"}}}})
	if err != nil || !isErr {
		t.Fatalf("create_entities: %q %v %v, want a refused write", text, isErr, err)
	}
	dist := filepath.Dir(s.script("server-memory"))
	if real, err := filepath.EvalSymlinks(dist); err == nil {
		dist = real
	}
	model := "gemkit's sandbox refused this MCP server during the call: a write to " + dist + string(filepath.Separator)
	if !strings.Contains(text, model) || !strings.Contains(text, ": its extension's folder, read-only to its servers whatever is allowed") {
		t.Errorf("the model is not told of the refused write:\n%s", text)
	}
	person := "extension realmcp's MCP server memory was refused a write to " + dist + string(filepath.Separator)
	data := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "realmcp")
	if log := s.log.String(); !strings.Contains(log, person) || !strings.Contains(log, "its data folder, its HOME ("+data+")") {
		t.Errorf("the log does not tell the person:\n%s", log)
	}
}

// TestClosed: a server reads the workspace and writes its data folder,
// and nothing else: not ~/.ssh or ~/.gemini, not the workspace, not a
// loopback server of the test's (Node's fetch, which ignores HTTP_PROXY,
// included). The hosts it tried are reported to the person, with the
// command that allows them, and to the model; after that command the
// server reaches the host.
func TestClosed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server of its own (the full run and the run as uid 65534 check it): runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	s.m.Sync([]extmcp.Spec{fx})
	for _, f := range []string{".ssh/id_ed25519", ".gemini/settings.json"} {
		p := filepath.Join(s.home, f)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("secret"), 0o600)
	}
	os.WriteFile(filepath.Join(s.ws, "a.txt"), []byte("workspace text"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	closedFiles(t, s, fx)
	target := closedHosts(t, s, fx, ln.Addr().(*net.TCPAddr).Port)
	closedAllowedHost(t, s, fx, target)
}

// closedFiles: the fixture reads the workspace and writes its data
// folder, and no more; a refused write is told to the model and the
// person with the command that allows it.
func closedFiles(t *testing.T, s *setup, fx extmcp.Spec) {
	if text, isErr, err := call(t, s.m, fx, "read", map[string]any{"path": filepath.Join(s.ws, "a.txt")}); err != nil || isErr || text != "workspace text" {
		t.Errorf("reading the workspace: %q %v %v", text, isErr, err)
	}
	data := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "realmcp")
	if text, isErr, err := call(t, s.m, fx, "write", map[string]any{"path": filepath.Join(data, "state")}); err != nil || isErr {
		t.Errorf("writing its data folder: %q %v %v", text, isErr, err)
	}
	// A refused write is told by the server's own error and the path
	// its call named; a closed path reads as absent, which is not told.
	for _, c := range []struct{ tool, arg, val, said string }{
		{"read", "path", filepath.Join(s.home, ".ssh", "id_ed25519"), ""},
		{"read", "path", filepath.Join(s.home, ".gemini", "settings.json"), ""},
		{"write", "path", filepath.Join(s.ws, "planted.txt"), "a write to " + filepath.Join(s.ws, "planted.txt") + ". The person (not the model) can allow it with: gemkit extensions sandbox realmcp --allow-write workspace"},
		{"write", "path", filepath.Join(s.home, ".bashrc"), "a write to " + filepath.Join(s.home, ".bashrc") + ": outside what its servers may write"},
	} {
		text, isErr, err := call(t, s.m, fx, c.tool, map[string]any{c.arg: c.val})
		if err != nil || !isErr || strings.Contains(text, "secret") {
			t.Errorf("%s %s: %q %v %v, want a refusal", c.tool, c.val, text, isErr, err)
		}
		if c.said != "" && !strings.Contains(text, c.said) {
			t.Errorf("%s %s: the model is not told %q: %q", c.tool, c.val, c.said, text)
		}
		if c.said == "" && strings.Contains(text, "gemkit's sandbox refused") {
			t.Errorf("%s %s: a read is told as a refusal: %q", c.tool, c.val, text)
		}
		t.Logf("%s %s: %s", c.tool, c.val, text)
	}
	if want := "extension realmcp's MCP server fixture was refused a write to " + filepath.Join(s.ws, "planted.txt") + " (the workspace is read-only to its servers); to allow it: gemkit extensions sandbox realmcp --allow-write workspace"; !strings.Contains(s.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}
	if _, err := os.Stat(filepath.Join(s.ws, "planted.txt")); err == nil {
		t.Error("the server wrote the workspace")
	}
}

// closedHosts: what the fixture tries on the network (port is a
// loopback server's) is refused, told, and kept in refusals.json; it
// returns the host refused, as --allow-host names it.
func closedHosts(t *testing.T, s *setup, fx extmcp.Spec, port int) (target string) {
	// What it tries on the network is refused and reported by host, to
	// the person with the command that allows it and to the model with
	// the call's result: a client that asks the proxy (refused there,
	// under no network too) and Node 20's fetch, which ignores
	// HTTP_PROXY and looks the name up itself (refused by the sandbox's
	// resolver). Its fetch runs WebAssembly (undici's parser), for whose
	// memory V8 reserves 10 GiB of address space: as uid 65534, with no
	// cgroup, the sandbox's bound on what each process writes of its own
	// leaves that room (sandbox's TestRuntimeReservations).
	target = fmt.Sprintf("127.0.0.1:%d", port)
	for _, c := range []struct{ tool, url, allow, person string }{
		{"proxied", "http://" + target + "/", "gemkit extensions sandbox realmcp --allow-host " + target,
			"extension realmcp's MCP server fixture was refused a connection to " + target + " (named in the call's arguments) (host not in network.allowedHosts); to allow it: gemkit extensions sandbox realmcp --allow-host " + target},
		{"fetch", fmt.Sprintf("http://exfil.example.test:%d/", port), "gemkit extensions sandbox realmcp --allow-host exfil.example.test",
			"extension realmcp's MCP server fixture was refused the host exfil.example.test (named in the call's arguments) (name looked up without the sandbox's proxy; host not allowed); to allow it: gemkit extensions sandbox realmcp --allow-host exfil.example.test"},
	} {
		start := time.Now()
		text, isErr, err := call(t, s.m, fx, c.tool, map[string]any{"url": c.url})
		if err != nil || !isErr || strings.Contains(text, "reached") || time.Since(start) > 30*time.Second {
			t.Errorf("%s %s: %q %v %v after %s, want a refusal at once", c.tool, c.url, text, isErr, err, time.Since(start))
		}
		if !strings.Contains(text, "gemkit's sandbox refused this MCP server during the call") || !strings.Contains(text, c.allow) {
			t.Errorf("%s: the model is not told what was refused and how to allow it: %q", c.tool, text)
		}
		if log := s.log.String(); !strings.Contains(log, c.person) || !strings.Contains(log, c.allow) {
			t.Errorf("%s: the log does not say %q:\n%s", c.tool, c.person, log)
		}
		t.Logf("%s: %s", c.tool, text)
	}
	kept := filepath.Join(s.home, ".local", "share", "gemkit", "refusals.json")
	if fi, err := os.Stat(kept); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("refusals file: %v %v", fi, err)
	}
	rs, err := extmcp.ReadRefusals(kept)
	if err != nil || len(rs) < 2 {
		t.Fatalf("kept refusals: %+v %v", rs, err)
	}
	return target
}

// closedAllowedHost: allowed by the command the log gave, the host is
// reached through the proxy only.
func closedAllowedHost(t *testing.T, s *setup, fx extmcp.Spec, target string) {
	// After the command the log gave (a new server), the server reaches
	// the host through the proxy; Node 20's fetch, which does not use
	// it, still does not.
	fx.Widening = extension.Widening{Hosts: []string{target}}
	s.m.Sync([]extmcp.Spec{fx})
	if text, isErr, err := call(t, s.m, fx, "proxied", map[string]any{"url": "http://" + target + "/"}); err != nil || isErr || text != "reached" {
		t.Errorf("after --allow-host %s: %q %v %v", target, text, isErr, err)
	}
	if text, isErr, err := call(t, s.m, fx, "fetch", map[string]any{"url": "http://" + target + "/"}); err != nil || !isErr || strings.Contains(text, "reached") ||
		!strings.Contains(text, "a connection to "+target+": connection to an allowed host without the sandbox's proxy") {
		t.Errorf("fetch %s: %q %v %v, want a refusal, reported", target, text, isErr, err)
	}
	if want := "extension realmcp's MCP server fixture was refused a connection to " + target + " (named in the call's arguments) (connection to an allowed host without the sandbox's proxy"; !strings.Contains(s.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}
}

// TestProgress: a call that asks for progress gets the server's
// (server-everything's trigger-long-running-operation sends one per step).
func TestProgress(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server of its own (the full run checks it): runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	every := s.spec("everything", s.script("server-everything"))
	s.m.Sync([]extmcp.Spec{every})
	var mu sync.Mutex
	var got []float64
	_, err := s.m.Call(context.Background(), every.Key(), "trigger-long-running-operation", json.RawMessage(`{"duration":0.3,"steps":3}`),
		func(p, total float64, _ string) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		})
	if err != nil {
		t.Fatal(err)
	}
	// On stdio the server's progress comes before the result it wrote
	// after it, and none after (TestProgressEndsWithCall).
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[2] != 3 {
		t.Errorf("progress %v, want 1, 2, 3", got)
	}
}

// TestBadServers: a server that exits at once, one that prints garbage,
// one that never answers are each reported in words naming it, with its
// stderr, within its bound, while another server keeps answering; one
// that dies during a call is started again once, then not. The bound is
// a loaded machine's: it also bounds the good Node server's start in the
// sandbox, which took over 3 s beside other work.
func TestBadServers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out a start's and a call's bound (about 25 s): runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	bound := 10 * time.Second
	bad := func(name, script string) extmcp.Spec {
		sp := extmcp.Spec{Extension: "badmcp", Server: name, Dir: s.ext, Command: "sh", Args: []string{"-c", script}, Timeout: bound}
		return sp
	}
	exits := bad("exits", "echo 'cannot find my config' >&2; exit 3")
	garbage := bad("garbage", "echo 'starting up' >&2; while read l; do echo 'this is not JSON'; done")
	silent := bad("silent", "echo 'waiting forever' >&2; while read l; do :; done")
	every := s.spec("everything", s.script("server-everything"))
	fixture := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fixture.Timeout = bound
	s.m.Sync([]extmcp.Spec{exits, garbage, silent, every, fixture})

	start := time.Now()
	tools, failed := s.m.Tools(context.Background())
	if d := time.Since(start); d > bound+5*time.Second {
		t.Errorf("listing took %s, over the bound %s", d, bound)
	}
	why := map[string]string{}
	for _, f := range failed {
		why[f.Spec.Server] = f.Err.Error()
		t.Logf("%s: %v", f.Spec.Server, f.Err)
	}
	for server, want := range map[string]string{"exits": "exited at once (exit status 3); the end of what it printed on stderr:\ncannot find my config", "garbage": "printed something other than MCP's JSON-RPC on its stdout", "silent": "did not answer MCP's initialize within 10s"} {
		w := why[server]
		if !strings.Contains(w, "extension badmcp's MCP server "+server) || !strings.Contains(w, want) {
			t.Errorf("server %s: %q does not name it with its stderr %q", server, w, want)
		}
	}
	if !toolNames(tools, "everything")["echo"] || !toolNames(tools, "fixture")["die"] {
		t.Fatalf("the good servers' tools are not listed: %v", tools)
	}
	if text, isErr, err := call(t, s.m, every, "echo", map[string]any{"message": "still here"}); err != nil || isErr || !strings.Contains(text, "still here") {
		t.Errorf("echo beside the bad servers: %q %v %v", text, isErr, err)
	}

	// A call it never answers comes back within its bound.
	start = time.Now()
	_, _, err := call(t, s.m, fixture, "hang", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "did not answer hang within 10s") {
		t.Errorf("hang: %v", err)
	}
	if d := time.Since(start); d > bound+2*time.Second {
		t.Errorf("hang came back after %s", d)
	}
	// A call the client cancels comes back at once, and the server
	// keeps answering.
	cctx, ccancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start = time.Now()
	_, err = s.m.Call(cctx, fixture.Key(), "hang", json.RawMessage(`{}`), nil)
	ccancel()
	if err == nil || time.Since(start) > bound/2 {
		t.Errorf("a cancelled call: %v after %s", err, time.Since(start))
	}
	if text, _, err := call(t, s.m, fixture, "ok", map[string]any{}); err != nil || text != "ok" {
		t.Errorf("ok after a cancelled call: %q %v", text, err)
	}
	// Dies: started again once, then not.
	if _, _, err := call(t, s.m, fixture, "die", map[string]any{}); err == nil || !strings.Contains(err.Error(), "exited during the call of die") || !strings.Contains(err.Error(), "asked to die") {
		t.Errorf("die: %v", err)
	}
	waitFor(t, func() bool { _, _, err := call(t, s.m, fixture, "ok", map[string]any{}); return err == nil })
	if _, _, err := call(t, s.m, fixture, "die", map[string]any{}); err == nil {
		t.Error("die a second time did not fail")
	}
	var err2 error
	waitFor(t, func() bool {
		_, _, err2 = call(t, s.m, fixture, "ok", map[string]any{})
		return err2 != nil && strings.Contains(err2.Error(), "exited twice")
	})
	t.Logf("after two deaths: %v", err2)
	if text, isErr, err := call(t, s.m, every, "echo", map[string]any{"message": "and still"}); err != nil || isErr || !strings.Contains(text, "and still") {
		t.Errorf("echo at the end: %q %v %v", text, isErr, err)
	}
}

// TestNothingLeftRunning: once the Manager is closed, no process of its
// servers is left.
func TestNothingLeftRunning(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 30*time.Second)
	every := s.spec("everything", s.script("server-everything"))
	s.m.Sync([]extmcp.Spec{every})
	if _, failed := s.m.Tools(context.Background()); len(failed) > 0 {
		t.Fatal(failed[0].Err)
	}
	if len(s.servers(t)) == 0 {
		t.Fatal("no server process found while it runs")
	}
	s.m.Close()
	waitFor(t, func() bool { return len(s.servers(t)) == 0 })
}

// TestIdle: a server unused for the idle time is stopped, and the next
// call starts it again (an idle stop is not a death).
func TestIdle(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server three times (about 10 s): runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	l := &sandbox.Launcher{}
	t.Cleanup(func() { l.Close() })
	m := extmcp.NewManager(extmcp.Config{Launcher: l, Workspace: s.ws, Timeout: 30 * time.Second, Idle: 500 * time.Millisecond,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home}})
	t.Cleanup(m.Close)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	m.Sync([]extmcp.Spec{fx})
	for i := range 3 {
		// The answer is the server's: it ran for the call (past round 0,
		// started again after it idled out). Whether it still runs once
		// the call has returned is the idle timer's race, not checked.
		if text, _, err := call(t, m, fx, "ok", map[string]any{}); err != nil || text != "ok" {
			t.Fatalf("call %d: %q %v", i, text, err)
		}
		// A forwarded call is a use too, and the server still idles out
		// after it (on a machine slow enough, it idled out before).
		if res, err, ok := forwardOnce(t, m, fx, "ok", map[string]any{}); !ok {
			t.Logf("call %d: the server stopped before the forwarded call", i)
		} else if err != nil || !strings.Contains(res, `"ok"`) {
			t.Fatalf("call %d, forwarded: %s %v", i, res, err)
		}
		waitFor(t, func() bool { return len(s.servers(t)) == 0 })
	}
}

// TestUnprivileged runs the tests above as uid 65534.
func TestUnprivileged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the package's server tests again (about 25 s): runs without -short, as in CI")
	}
	if os.Getuid() == 0 {
		extensionDir(t)
	}
	sandboxtest.RerunUnprivileged(t, "^Test(RealServers|Closed|BadServers|NothingLeftRunning|KeptCatalog|AgreedCopyShown)$")
}

// running lists the pids whose command line names dir.
func running(t *testing.T, dir string) []string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir) && e.Name() != "self" {
			out = append(out, e.Name())
		}
	}
	return out
}

// servers are the processes of s's servers: their command lines name the
// extension's folder, shared by the package's tests, and their
// environments s's home, each test's own, so that a test running beside
// (or the package's rerun as uid 65534) is not counted.
func (s *setup) servers(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pid := range running(t, s.ext) {
		n, _ := strconv.Atoi(pid)
		if env, err := proc.Environ(n); err == nil && slices.ContainsFunc(env, func(kv string) bool { return strings.Contains(kv, s.home) }) {
			out = append(out, pid)
		}
	}
	return out
}

// waitFor waits up to 10 s until ok holds: the servers' processes and
// the manager's inner state change with no event to wait on.
func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	if !gemkittest.Poll(10*time.Second, 50*time.Millisecond, ok) {
		t.Fatal("timed out")
	}
}

// TestWidened: what the person allows by name (gemkit extensions sandbox
// --allow-host, --allow-write workspace) the server gets, and no more:
// the allowed loopback server through the sandbox's proxy (asked as a
// client that honours HTTP_PROXY asks; Node 20's fetch does not, and
// stays refused), the workspace but its protected paths.
func TestWidened(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	allowed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer allowed.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, ln := range []net.Listener{allowed, other} {
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("reached")) }))
	}
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fx.Widening = extension.Widening{Hosts: []string{allowed.Addr().String()}, Write: extension.AccessWorkspace}
	s.m.Sync([]extmcp.Spec{fx})
	os.MkdirAll(filepath.Join(s.ws, ".git"), 0o755)

	if text, isErr, err := call(t, s.m, fx, "proxied", map[string]any{"url": "http://" + allowed.Addr().String() + "/"}); err != nil || isErr || text != "reached" {
		t.Errorf("getting the allowed host through the proxy: %q %v %v", text, isErr, err)
	}
	if text, isErr, err := call(t, s.m, fx, "write", map[string]any{"path": filepath.Join(s.ws, "made.txt")}); err != nil || isErr {
		t.Errorf("writing the workspace: %q %v %v", text, isErr, err)
	}
	for _, c := range []struct{ tool, arg, val string }{
		{"proxied", "url", "http://" + other.Addr().String() + "/"},
		{"fetch", "url", "http://" + other.Addr().String() + "/"},
		{"write", "path", filepath.Join(s.ws, ".git", "config")},
		{"write", "path", filepath.Join(s.home, ".bashrc")},
	} {
		text, isErr, err := call(t, s.m, fx, c.tool, map[string]any{c.arg: c.val})
		if err != nil || !isErr || strings.Contains(text, "reached") {
			t.Errorf("%s %s: %q %v %v, want a refusal", c.tool, c.val, text, isErr, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.ws, ".git", "config")); err == nil {
		t.Error("the server wrote the workspace's .git")
	}
	if want := "was refused a write to " + filepath.Join(s.ws, ".git", "config") + " (a protected path of the workspace"; !strings.Contains(s.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}
	// The refusal is reported in words, with the command that allows it.
	if want := "extension realmcp's MCP server fixture was refused a connection to " + other.Addr().String() +
		" (named in the call's arguments) (host not in network.allowedHosts); to allow it: gemkit extensions sandbox realmcp --allow-host " + other.Addr().String(); !strings.Contains(s.log.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, s.log.String())
	}
}

// TestStartCancelled: a start that what waited for it gave up on (the
// client went, or cancelled its request) is told as that, not as a
// server that did not answer within its bound.
func TestStartCancelled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	silent := extmcp.Spec{Extension: "badmcp", Server: "silent", Dir: s.ext, Command: "sh", Args: []string{"-c", "while read l; do :; done"}, Timeout: 20 * time.Second}
	s.m.Sync([]extmcp.Spec{silent})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, failed := s.m.Tools(ctx)
	if len(failed) != 1 {
		t.Fatalf("%d failures, want the silent server's: %+v", len(failed), failed)
	}
	// Not the server's 20 s: 15 s is a loaded machine's bound.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("listing given up on after 500ms took %s", d)
	}
	if err := failed[0].Err.Error(); !strings.Contains(err, "stopped waiting (the client went or cancelled its request, or gemkit mcp ended)") || strings.Contains(err, "within") || !errors.Is(failed[0].Err, extmcp.ErrStopped) {
		t.Errorf("a start given up on is told as %q", err)
	}
}

// TestAllowedGateSandboxed: consent is checked while the sandbox is set
// up; one refused after the set-up began keeps the program from running
// (it would write a file in its HOME, the data folder) and is the error
// the person sees.
func TestAllowedGateSandboxed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a sandbox: runs without -short, as in CI")
	}
	s := newSetup(t, 3*time.Second) // the shell never answers initialize
	sp := extmcp.Spec{Extension: "realmcp", Server: "gated", Dir: s.ext, Command: "sh", Args: []string{"-c", `echo ran > "$HOME/ran"; while read l; do :; done`},
		Allowed: func() error {
			time.Sleep(300 * time.Millisecond)
			return errors.New("you have not agreed to the extension realmcp as it is now")
		}}
	s.m.Sync([]extmcp.Spec{sp})
	_, failed := s.m.Tools(context.Background())
	if len(failed) != 1 || failed[0].Err.Error() != "extension realmcp's MCP server gated is not started: you have not agreed to the extension realmcp as it is now" {
		t.Fatalf("failures %+v, want the refused consent", failed)
	}
	data := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "realmcp")
	if _, err := os.Stat(filepath.Join(data, "ran")); err == nil {
		t.Error("the program ran though its consent was refused")
	}
	// The same command with consent does run: the check above can fail.
	sp.Server, sp.Allowed = "agreed", nil
	s.m.Sync([]extmcp.Spec{sp})
	s.m.Tools(context.Background())
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool { _, err := os.Stat(filepath.Join(data, "ran")); return err == nil }) {
		t.Errorf("the program did not run with consent; the log:\n%s", s.log.String())
	}
}

// TestAgreedCopyShown: a server whose extension has gemkit's copy as the
// person agreed to it (Spec.Agreed) is shown the copy at its folder's
// path, read-only, and starts without the check of its folder
// (Spec.Allowed is not asked, though it would refuse): an edit of the
// folder since consent runs nowhere.
func TestAgreedCopyShown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a sandbox: runs without -short, as in CI")
	}
	s := newSetup(t, 3*time.Second) // the shell never answers initialize
	live, agreed := t.TempDir(), t.TempDir()
	for dir, v := range map[string]string{live: "edited since\n", agreed: "as agreed\n"} {
		os.Chmod(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var asked atomic.Bool
	sp := extmcp.Spec{Extension: "copied", Server: "s", Dir: live, Command: "sh",
		Args: []string{"-c", `cat "` + live + `/marker" > "$HOME/seen"; echo changed > "` + live + `/marker" 2>/dev/null || echo refused >> "$HOME/seen"; while read l; do :; done`},
		Allowed: func() error {
			asked.Store(true)
			return errors.New("you have not agreed to the extension copied as it is now")
		},
		Agreed: func() string { return agreed },
	}
	s.m.Sync([]extmcp.Spec{sp})
	s.m.Tools(context.Background())
	seen := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "copied", "seen")
	if !gemkittest.Poll(30*time.Second, 20*time.Millisecond, func() bool {
		b, _ := os.ReadFile(seen)
		return strings.Count(string(b), "\n") == 2
	}) {
		b, _ := os.ReadFile(seen)
		t.Fatalf("the server saw %q; the log:\n%s", b, s.log.String())
	}
	if b, _ := os.ReadFile(seen); string(b) != "as agreed\nrefused\n" {
		t.Errorf("the server saw %q at its folder, want the copy's marker, read-only", b)
	}
	if asked.Load() {
		t.Error("the folder was checked (Allowed asked) for a start from the copy")
	}
	for dir, v := range map[string]string{live: "edited since\n", agreed: "as agreed\n"} {
		if b, _ := os.ReadFile(filepath.Join(dir, "marker")); string(b) != v {
			t.Errorf("%s/marker = %q, want %q", dir, b, v)
		}
	}
}
