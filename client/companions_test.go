package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/conformance/scripted"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestMain removes the gemkit binary built for the tests.
func TestMain(m *testing.M) { os.Exit(gemkittest.Main(m)) }

// companionCommands are the companions every flow runs against: ours as
// a process (`gemkit ide serve --editor stdio`) and the reference built
// like the official one (Node, express, the TypeScript MCP SDK).
func companionCommands(t *testing.T) map[string]scripted.Options {
	ref := filepath.Join(gemkittest.RepoRoot(t), "bench", "reference", "companion.mjs")
	node, _ := gemkittest.Interop(t, "@modelcontextprotocol/sdk")
	return map[string]scripted.Options{
		"gemkit":    {Binary: gemkittest.Gemkit(t)},
		"reference": {Command: []string{node, ref}},
	}
}

type procEnv struct {
	ed  *scripted.Editor
	ws  string
	dir string
}

func startProc(t *testing.T, o scripted.Options) *procEnv {
	t.Helper()
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	o.Workspace, o.TMPDIR = []string{ws}, tmp
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ed, err := scripted.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ed.Stop)
	return &procEnv{ed: ed, ws: ws, dir: filepath.Join(tmp, "gemini", "ide")}
}

func (p *procEnv) connect(t *testing.T) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, _, err := Connect(ctx, Options{Dir: p.dir, Cwd: p.ws, IDEPID: os.Getpid(), Getenv: func(k string) string {
		if k == "SSH_CONNECTION" {
			return "x"
		}
		return ""
	}})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func waitDiff(t *testing.T, ed *scripted.Editor) scripted.Diff {
	t.Helper()
	return waitFor(t, ed.Opened, "diff shown in the editor")
}

// TestFlowsAgainstCompanions runs every client flow against our companion
// process and against the reference companion, which we did not write in
// Go.
func TestFlowsAgainstCompanions(t *testing.T) {
	for name, o := range companionCommands(t) {
		t.Run(name, func(t *testing.T) {
			p := startProc(t, o)
			c := p.connect(t)
			if !c.DiffingEnabled() {
				t.Fatalf("diffing disabled; tools %v", c.Tools())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := c.WaitContext(ctx); err != nil {
				t.Fatalf("no initial context: %v", err)
			}

			updates := checkFocusContext(t, c, p)
			target := filepath.Join(p.ws, "x.go")
			checkAcceptReject(ctx, t, c, p, target)
			checkCloseDiff(ctx, t, c, p, target)
			c2 := checkSecondClient(ctx, t, c, p, updates)
			checkCompanionGone(t, c, c2, p, target)
		})
	}
}

// checkFocusContext focuses a file in the editor and waits for the
// context that names it; the channel keeps the client's later updates.
func checkFocusContext(t *testing.T, c *Client, p *procEnv) chan *ide.Context {
	t.Helper()
	updates := make(chan *ide.Context, 32)
	c.OnContext(func(v *ide.Context) { updates <- v })
	f := filepath.Join(p.ws, "a.txt")
	if err := os.WriteFile(f, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.ed.Focus(f, 2, 5, "hello")
	for {
		v := waitFor(t, updates, "context with the focused file")
		if v != nil && v.WorkspaceState != nil && len(v.WorkspaceState.OpenFiles) == 1 {
			file := v.WorkspaceState.OpenFiles[0]
			if file.Path != f || !file.IsActive || file.Cursor == nil || file.Cursor.Line != 2 || file.SelectedText != "hello" {
				t.Errorf("file %+v", file)
			}
			break
		}
	}
	return updates
}

// checkAcceptReject opens a diff the person accepts with edits, then
// one the person rejects.
func checkAcceptReject(ctx context.Context, t *testing.T, c *Client, p *procEnv, target string) {
	t.Helper()
	res := make(chan DiffOutcome, 1)
	errs := make(chan error, 1)
	// Accept with edits.
	go func() { o, err := c.OpenDiff(ctx, target, "proposal"); res <- o; errs <- err }()
	if d := waitDiff(t, p.ed); d.FilePath != target || d.NewContent != "proposal" {
		t.Errorf("diff %+v", d)
	}
	p.ed.Accept(target, "proposal + edits")
	if o := waitFor(t, res, "accept"); !o.Accepted || o.Content != "proposal + edits" {
		t.Errorf("accept %+v", o)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	// Reject.
	go func() { o, err := c.OpenDiff(ctx, target, "second"); res <- o; errs <- err }()
	waitDiff(t, p.ed)
	p.ed.Reject(target)
	if o := waitFor(t, res, "reject"); o.Accepted {
		t.Errorf("reject %+v", o)
	}
	<-errs
}

// checkCloseDiff closes a diff from the CLI: closeDiff returns the
// proposal without resolving it, and the CLI then resolves it.
func checkCloseDiff(ctx context.Context, t *testing.T, c *Client, p *procEnv, target string) {
	t.Helper()
	// closeDiff from the CLI: the proposal, no notification.
	seen := make(chan string, 4)
	d, err := c.StartDiff(ctx, target, "third")
	if err != nil {
		t.Fatal(err)
	}
	waitDiff(t, p.ed)
	content, ok, err := c.CloseDiff(ctx, target)
	if err != nil || !ok || content != "third" {
		t.Errorf("closeDiff = %q %v %v", content, ok, err)
	}
	go func() { o, _ := d.Wait(ctx); seen <- map[bool]string{true: "accepted", false: "rejected"}[o.Accepted] }()
	select {
	case s := <-seen:
		t.Errorf("closeDiff also resolved the diff (%s)", s)
	case <-time.After(200 * time.Millisecond):
	}
	if err := c.ResolveDiffFromCLI(ctx, target, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, seen, "resolved from the CLI")
	if _, ok, err := c.CloseDiff(ctx, target); ok || err != nil {
		t.Errorf("closeDiff without a diff: %v %v", ok, err)
	}
}

// checkSecondClient connects a second client beside c: both see the
// context, and c's closeDiff does not disturb c2's waiting diff.
func checkSecondClient(ctx context.Context, t *testing.T, c *Client, p *procEnv, updates chan *ide.Context) *Client {
	t.Helper()
	res := make(chan DiffOutcome, 1)
	errs := make(chan error, 1)
	// A second client at the same time.
	c2 := p.connect(t)
	u2 := make(chan *ide.Context, 32)
	c2.OnContext(func(v *ide.Context) { u2 <- v })
	g := filepath.Join(p.ws, "b.txt")
	if err := os.WriteFile(g, []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.ed.Focus(g, 1, 1, "")
	for _, u := range []chan *ide.Context{updates, u2} {
		for {
			v := waitFor(t, u, "context on both clients")
			if v != nil && v.WorkspaceState != nil && len(v.WorkspaceState.OpenFiles) > 0 && v.WorkspaceState.OpenFiles[0].Path == g {
				break
			}
		}
	}
	other := filepath.Join(p.ws, "y.go")
	go func() { o, err := c2.OpenDiff(ctx, other, "from c2"); res <- o; errs <- err }()
	waitDiff(t, p.ed)
	if content, ok, err := c.CloseDiff(ctx, filepath.Join(p.ws, "none.go")); ok || err != nil {
		t.Errorf("c1's closeDiff while c2 waits: %q %v %v", content, ok, err)
	}
	p.ed.Accept(other, "from c2, accepted")
	if o := waitFor(t, res, "c2 accept"); !o.Accepted || o.Content != "from c2, accepted" {
		t.Errorf("c2 outcome %+v", o)
	}
	<-errs
	return c2
}

// checkCompanionGone kills the companion while a diff waits: the
// pending call fails, and both clients notice.
func checkCompanionGone(t *testing.T, c, c2 *Client, p *procEnv, target string) {
	t.Helper()
	errs := make(chan error, 1)
	// The companion goes away: both clients notice.
	states := make(chan State, 4)
	c.OnStateChange(func(s State) { states <- s })
	go func() { _, err := c.OpenDiff(context.Background(), target, "pending"); errs <- err }()
	waitDiff(t, p.ed)
	p.ed.Kill()
	if s := waitFor(t, states, "disconnected"); s.Status != Disconnected {
		t.Errorf("state %+v", s)
	}
	if err := waitFor(t, errs, "pending diff"); !errors.Is(err, ErrDisconnected) {
		t.Errorf("pending diff: %v", err)
	}
	select {
	case <-c2.Done():
	case <-time.After(30 * time.Second):
		t.Error("second client did not notice")
	}
	if !strings.Contains(c.State().Details, "lost") {
		t.Errorf("details %q", c.State().Details)
	}
}
