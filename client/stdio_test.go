package client

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// stdioCompanion returns the command of interop/stdio-companion.mjs, a
// companion over MCP stdio built with the TypeScript MCP SDK.
func stdioCompanion(t *testing.T) (string, string) {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@modelcontextprotocol/sdk")
	return node, filepath.Join(interop, "stdio-companion.mjs")
}

func stdioFlows(t *testing.T, c *Client, active string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c.Endpoint().Transport != "stdio" || !c.DiffingEnabled() {
		t.Fatalf("endpoint %v, tools %v", c.Endpoint(), c.Tools())
	}
	cur, err := c.WaitContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f := cur.WorkspaceState.OpenFiles; len(f) != 1 || f[0].Path != active || !f[0].IsActive {
		t.Errorf("context %+v", cur.WorkspaceState)
	}
	o, err := c.OpenDiff(ctx, "/w/a.txt", "new")
	if err != nil || !o.Accepted || o.Content != "new (edited)" {
		t.Errorf("accept: %+v %v", o, err)
	}
	o, err = c.OpenDiff(ctx, "/w/a.txt", "please reject")
	if err != nil || o.Accepted {
		t.Errorf("reject: %+v %v", o, err)
	}
	d, err := c.StartDiff(ctx, "/w/b.txt", "hold on")
	if err != nil {
		t.Fatal(err)
	}
	content, ok, err := c.CloseDiff(ctx, "/w/b.txt")
	if err != nil || !ok || content != "hold on" {
		t.Errorf("closeDiff %q %v %v", content, ok, err)
	}
	d.Abandon()
}

func TestStdioFromDiscoveryFile(t *testing.T) {
	node, script := stdioCompanion(t)
	root := t.TempDir()
	dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	active := filepath.Join(ws, "active.go")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// The port comes first in the real CLI's order (IdeClient.connect in
	// gemini-cli 0.61.0 packages/core/src/ide/ide-client.ts); nothing listens on it,
	// so the stdio entry of the same file is used next.
	df := ide.DiscoveryFile{Port: gemkittest.ClosedPort(t), WorkspacePath: ws, IDEInfo: &ide.IDEInfo{Name: "stdio", DisplayName: "Stdio IDE"},
		Stdio: &ide.StdioConfig{Command: node, Args: []string{script, "--file", active}}}
	data, _ := json.Marshal(df)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, discovery.FileName(os.Getpid(), df.Port)), data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, plan, err := Connect(context.Background(), Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Host: "127.0.0.1"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer c.Close(context.Background())
	if len(plan.Endpoints) != 2 || plan.Endpoints[0].Transport != "http" || plan.Endpoints[1].Transport != "stdio" {
		t.Errorf("endpoints %v", plan.Endpoints)
	}
	stdioFlows(t, c, active)
}

func TestStdioFromEnvironment(t *testing.T) {
	node, script := stdioCompanion(t)
	ws := t.TempDir()
	active := filepath.Join(ws, "env.go")
	args, _ := json.Marshal([]string{script, "--file", active})
	env := map[string]string{
		ide.EnvServerStdioCmd:  node,
		ide.EnvServerStdioArgs: string(args),
		ide.EnvWorkspacePath:   ws,
		"TERM_PROGRAM":         "vscode",
	}
	o := Options{Dir: filepath.Join(ws, "no-such-dir"), Cwd: ws, IDEPID: os.Getpid(), Getenv: func(k string) string { return env[k] }}
	c, plan, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	// TERM_PROGRAM=vscode in a process whose command lacks "code": a VS Code fork.
	if plan.IDE.Name != "vscodefork" || plan.WorkspaceSource != "env" || plan.Endpoints[0].Source != "env" {
		t.Errorf("plan %+v", plan)
	}
	stdioFlows(t, c, active)

	// The companion process ending is a lost connection.
	states := make(chan State, 4)
	c.OnStateChange(func(s State) { states <- s })
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := waitFor(t, states, "closed"); s.Status != Disconnected {
		t.Errorf("state %+v", s)
	}

	// A command that does not start is an attempt that failed.
	env[ide.EnvServerStdioCmd] = filepath.Join(ws, "no-such-command")
	_, _, err = Connect(context.Background(), o)
	var ce *ConnectError
	var de *DialError
	if !errors.As(err, &ce) || len(ce.Attempts) != 1 || !errors.As(ce.Attempts[0].Err, &de) || de.Kind != "spawn" {
		t.Errorf("bad command: %v", err)
	}
	// Doctor names it.
	d, err := Doctor(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	found := slices.ContainsFunc(d.Findings, func(f Finding) bool {
		return (f.Subject == ide.EnvServerStdioCmd && f.Severity == "error" && strings.Contains(f.Message, "cannot be found"))
	})
	if !found || d.Works {
		t.Errorf("doctor: works=%v %+v", d.Works, d.Findings)
	}
}

func TestStdioCompanionExits(t *testing.T) {
	// A companion that answers initialize and tools/list, then exits.
	script := `read l; echo '{"jsonrpc":"2.0","id":'"$(echo "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')"',"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}'; read l; read l; echo '{"jsonrpc":"2.0","id":'"$(echo "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')"',"result":{"tools":[]}}'; sleep 0.3`
	c, err := Dial(context.Background(), Endpoint{Transport: "stdio", Command: "sh", Args: []string{"-c", script}}, Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer c.Close(context.Background())
	if c.DiffingEnabled() || c.Server().Name != "sh" {
		t.Errorf("server %+v tools %v", c.Server(), c.Tools())
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("exit not noticed")
	}
	if s := c.State(); s.Status != Disconnected {
		t.Errorf("state %+v", s)
	}
}

// TestStdioCompanionDiesAtStart: a companion that exits before answering
// initialize fails the dial, and nothing of the attempt keeps running,
// even with a context that never ends.
func TestStdioCompanionDiesAtStart(t *testing.T) {
	before := runtime.NumGoroutine()
	_, err := Dial(context.Background(), Endpoint{Transport: "stdio", Command: "sh", Args: []string{"-c", "echo broken >&2; exit 3"}}, Options{})
	var de *DialError
	if !errors.As(err, &de) || de.Kind != "spawn" || !strings.Contains(err.Error(), "companion exited: exit status 3 (stderr: broken)") {
		t.Fatalf("Dial: %v", err)
	}
	// Its child keeps stdout open: the exit is still noticed at once, not
	// when the child ends 10 s later (5 s is a loaded machine's bound).
	start := time.Now()
	_, err = Dial(context.Background(), Endpoint{Transport: "stdio", Command: "sh", Args: []string{"-c", "sleep 10 & exit 4"}}, Options{})
	if !errors.As(err, &de) || de.Kind != "spawn" || !strings.Contains(err.Error(), "exit status 4") {
		t.Fatalf("Dial: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the exit was noticed after %v", d)
	}
	gemkittest.WaitGoroutines(t, before, "after the failed dial")
}

// TestDoctorStdioFileCommandMissing: a discovery file whose stdio command
// is gone (the companion was uninstalled) is named with the fix.
func TestDoctorStdioFileCommandMissing(t *testing.T) {
	root, dir, ws := ideDirs(t)
	missing := filepath.Join(root, "uninstalled-companion")
	b, _ := json.Marshal(map[string]any{"stdio": map[string]any{"command": missing}, "workspacePath": ws, "ideInfo": map[string]string{"name": "x", "displayName": "X"}})
	if err := os.WriteFile(filepath.Join(dir, discovery.FileName(os.Getpid(), 1)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Doctor(context.Background(), Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	found := slices.ContainsFunc(d.Findings, func(f Finding) bool {
		return (f.Severity == "error" && strings.Contains(f.Message, "its stdio command \""+missing+"\" cannot be found"))
	})
	if !found || d.Works {
		t.Errorf("doctor: works=%v %+v", d.Works, d.Findings)
	}
}

// TestDoctorFixQuotesPath: the rm command doctor suggests for a
// discovery file in a folder whose name holds ;, & and * removes that
// file when pasted into a shell: unquoted, the shell would end the
// command at ;, run the rest in the background at & and glob at *.
func TestDoctorFixQuotesPath(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a;b&c*")
	dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	for _, d := range []string{dir, ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(map[string]any{"stdio": map[string]any{"command": filepath.Join(root, "uninstalled")}, "workspacePath": ws, "ideInfo": map[string]string{"name": "x", "displayName": "X"}})
	file := filepath.Join(dir, discovery.FileName(os.Getpid(), 1))
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Doctor(context.Background(), Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for _, f := range d.Findings {
		if _, c, ok := strings.Cut(f.Fix, "delete the file: "); ok {
			cmd = c
		}
	}
	if !strings.HasPrefix(cmd, "rm ") {
		t.Fatalf("no rm among the fixes: %+v", d.Findings)
	}
	run := exec.Command("sh", "-c", cmd)
	run.Dir = ws
	out, err := run.CombinedOutput()
	if _, serr := os.Stat(file); err != nil || !os.IsNotExist(serr) {
		t.Errorf("%s (%v) left the file (%v):\n%s", cmd, err, serr, out)
	}
}

// ideDirs are a fresh folder (root), a discovery folder in it as the
// CLI's (dir: root/gemini/ide) and a workspace (ws), both made 0700.
func ideDirs(t *testing.T) (root, dir, ws string) {
	t.Helper()
	root = t.TempDir()
	dir, ws = filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	for _, d := range []string{dir, ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return root, dir, ws
}
