package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// testEditor is the editor side of our companion in these tests: it keeps
// the diffs the companion asks it to show, like a real editor's diff
// views, and lets the test play the person who answers them.
type testEditor struct {
	mu     sync.Mutex
	diffs  map[string]string
	log    []string // "open PATH" and "close PATH", in the order they came
	opened chan string
	closed chan string
}

func newTestEditor() *testEditor {
	return &testEditor{diffs: map[string]string{}, opened: make(chan string, 16), closed: make(chan string, 16)}
}

func (e *testEditor) OpenDiff(_ context.Context, path, content string) error {
	e.mu.Lock()
	e.diffs[path] = content
	e.log = append(e.log, "open "+path)
	e.mu.Unlock()
	e.opened <- path
	return nil
}

func (e *testEditor) CloseDiff(_ context.Context, path string) (string, bool, error) {
	e.mu.Lock()
	content, ok := e.diffs[path]
	delete(e.diffs, path)
	e.log = append(e.log, "close "+path)
	e.mu.Unlock()
	e.closed <- path
	return content, ok, nil
}

func (e *testEditor) FileWritten(context.Context, string) error { return nil }

// answer removes the diff from the editor's view, as a click does.
func (e *testEditor) answer(path string) {
	e.mu.Lock()
	delete(e.diffs, path)
	e.mu.Unlock()
}

func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

type env struct {
	t      testing.TB
	dir    string // discovery directory
	ws     string // workspace folder
	srv    *companion.Server
	ed     *testEditor
	stop   context.CancelFunc
	served chan error
}

// startCompanion runs our companion for workspace folder ws, announcing
// itself in a private discovery directory under the pid of this test
// process (so that the client's IDE pid matches it).
func startCompanion(t testing.TB) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{t: t, dir: filepath.Join(root, "gemini", "ide"), ws: filepath.Join(root, "ws"), ed: newTestEditor()}
	if err := os.MkdirAll(e.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := companion.New(companion.Config{
		Workspace:    []string{e.ws},
		IDEInfo:      ide.IDEInfo{Name: "gemkit-test", DisplayName: "Gemkit Test"},
		PID:          os.Getpid(),
		Editor:       e.ed,
		DiscoveryDir: e.dir,
		Logger:       discardLogger(),
		Debounce:     5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.srv, e.stop, e.served = srv, cancel, make(chan error, 1)
	go func() { e.served <- srv.Serve(ctx) }()
	waitFor(t, srv.Ready(), "companion ready")
	t.Cleanup(func() {
		cancel()
		<-e.served
	})
	return e
}

// options are the client options of a CLI started in dir (a folder of the
// workspace) inside the editor's terminal.
func (e *env) options(cwd string) Options {
	return Options{
		Dir:    e.dir,
		Cwd:    cwd,
		IDEPID: os.Getpid(),
		Getenv: func(k string) string {
			// Not a container companion: the CLI dials 127.0.0.1 even
			// where /.dockerenv exists.
			if k == "SSH_CONNECTION" {
				return "127.0.0.1 1 127.0.0.1 22"
			}
			return ""
		},
	}
}

func (e *env) connect() *Client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := Connect(ctx, e.options(e.ws))
	if err != nil {
		e.t.Fatalf("Connect: %v", err)
	}
	e.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func (e *env) file(name, content string) string {
	p := filepath.Join(e.ws, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestConnectAndContext(t *testing.T) {
	e := startCompanion(t)
	var states []Status
	var smu sync.Mutex
	o := e.options(filepath.Join(e.ws))
	o.OnState = func(s State) { smu.Lock(); states = append(states, s.Status); smu.Unlock() }
	c, plan, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if plan.Choice.Chosen.Path != e.srv.DiscoveryPath() || plan.IDE.DisplayName != "Gemkit Test" || plan.TokenSource != "file" {
		t.Errorf("plan: %+v chosen %s", plan, plan.Choice.Chosen.Path)
	}
	if !c.DiffingEnabled() || c.Server().Name != ide.ServerName || c.Server().ProtocolVersion != ide.ProtocolVersion || c.Server().SessionID == "" {
		t.Errorf("server %+v tools %v", c.Server(), c.Tools())
	}
	// The first GET brings the current (empty) context.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitContext(ctx); err != nil {
		t.Fatal(err)
	}

	updates := make(chan *ide.Context, 16)
	c.OnContext(func(v *ide.Context) { updates <- v })
	trust := make(chan bool, 4)
	c.OnTrustChange(func(v bool) { trust <- v })

	a := e.file("a.go", "package a\n")
	b := e.file("b.go", "package b\n")
	e.srv.Focus(a, &ide.Cursor{Line: 1, Character: 2}, "")
	e.srv.Focus(b, &ide.Cursor{Line: 3, Character: 4}, strings.Repeat("x", 20000))
	var got *ide.Context
	for got == nil || len(got.WorkspaceState.OpenFiles) < 2 {
		got = waitFor(t, updates, "context with two files")
	}
	files := got.WorkspaceState.OpenFiles
	if files[0].Path != b || !files[0].IsActive || files[0].Cursor == nil || files[0].Cursor.Line != 3 {
		t.Errorf("active file: %+v", files[0])
	}
	if n := len(files[0].SelectedText); n != ide.MaxSelectedTextLength+len(ide.TruncatedSuffix) || !strings.HasSuffix(files[0].SelectedText, ide.TruncatedSuffix) {
		t.Errorf("selection of %d bytes", n)
	}
	if files[1].Path != a || files[1].IsActive || files[1].Cursor != nil {
		t.Errorf("older file: %+v", files[1])
	}
	if cur := c.Context(); cur == nil || len(cur.WorkspaceState.OpenFiles) != 2 {
		t.Errorf("Context() = %+v", cur)
	}

	yes := true
	if err := e.srv.UpdateWorkspace(nil, &yes); err != nil {
		t.Fatal(err)
	}
	if !waitFor(t, trust, "trust change") {
		t.Error("trust false")
	}
	smu.Lock()
	if len(states) < 2 || states[0] != Connecting || states[len(states)-1] != Connected {
		t.Errorf("states %v", states)
	}
	smu.Unlock()
}

func TestDiffAcceptRejectClose(t *testing.T) {
	e := startCompanion(t)
	c := e.connect()
	ctx := context.Background()
	path := e.file("main.go", "old\n")

	// Accepted with the person's own edits.
	res := make(chan DiffOutcome, 1)
	errs := make(chan error, 1)
	go func() {
		o, err := c.OpenDiff(ctx, path, "proposal\n")
		res <- o
		errs <- err
	}()
	waitFor(t, e.ed.opened, "diff shown")
	e.ed.answer(path)
	e.srv.DiffAccepted(path, "proposal, edited\n")
	if o := waitFor(t, res, "accepted"); !o.Accepted || o.Content != "proposal, edited\n" {
		t.Errorf("accepted outcome %+v", o)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	// Rejected.
	go func() {
		o, err := c.OpenDiff(ctx, path, "second\n")
		res <- o
		errs <- err
	}()
	waitFor(t, e.ed.opened, "diff shown")
	e.ed.answer(path)
	e.srv.DiffRejected(path)
	if o := waitFor(t, res, "rejected"); o.Accepted {
		t.Errorf("rejected outcome %+v", o)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	// Closed from the CLI side: the proposal comes back, nothing resolves
	// the pending diff on its own; ResolveDiffFromCLI does.
	d, err := c.StartDiff(ctx, path, "third\n")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.ed.opened, "diff shown")
	content, ok, err := c.CloseDiff(ctx, path)
	if err != nil || !ok || content != "third\n" {
		t.Errorf("CloseDiff = %q, %v, %v", content, ok, err)
	}
	if _, ok, err := c.CloseDiff(ctx, path); ok || err != nil {
		t.Errorf("second CloseDiff = %v, %v", ok, err)
	}
	go func() {
		o, err := d.Wait(ctx)
		res <- o
		errs <- err
	}()
	select {
	case o := <-res:
		t.Fatalf("closeDiff resolved the diff by itself: %+v", o)
	case <-time.After(200 * time.Millisecond):
	}
	if err := c.ResolveDiffFromCLI(ctx, path, false); err != nil {
		t.Fatal(err)
	}
	if o := waitFor(t, res, "resolved from CLI"); o.Accepted {
		t.Errorf("outcome %+v", o)
	}
	<-errs

	// Not text: refused before the companion sees it.
	if _, err := c.StartDiff(ctx, path, "\xffbinary"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("binary proposal: %v", err)
	}

	// openDiff refused by the companion (relative path): an error.
	if _, err := c.OpenDiff(ctx, "relative.go", "x"); err == nil {
		t.Error("openDiff of a relative path succeeded")
	}
}

func TestOneDiffAtATimeAndCancel(t *testing.T) {
	e := startCompanion(t)
	c := e.connect()
	p1, p2 := e.file("one.txt", "1"), e.file("two.txt", "2")
	ctx := context.Background()
	first := make(chan DiffOutcome, 1)
	go func() { o, _ := c.OpenDiff(ctx, p1, "one'"); first <- o }()
	waitFor(t, e.ed.opened, "first diff")
	second := make(chan DiffOutcome, 1)
	go func() { o, _ := c.OpenDiff(ctx, p2, "two'"); second <- o }()
	select {
	case p := <-e.ed.opened:
		t.Fatalf("second diff %s shown while the first is open", p)
	case <-time.After(200 * time.Millisecond):
	}
	e.ed.answer(p1)
	e.srv.DiffAccepted(p1, "one'")
	waitFor(t, first, "first answer")
	if p := waitFor(t, e.ed.opened, "second diff"); p != p2 {
		t.Errorf("second diff of %s", p)
	}
	e.ed.answer(p2)
	e.srv.DiffRejected(p2)
	waitFor(t, second, "second answer")

	// Cancelling the wait closes the diff in the editor.
	cctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 1)
	go func() { _, err := c.OpenDiff(cctx, p1, "again"); errs <- err }()
	waitFor(t, e.ed.opened, "third diff")
	cancel()
	if err := waitFor(t, errs, "cancel"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if p := waitFor(t, e.ed.closed, "diff closed after cancel"); p != p1 {
		t.Errorf("closed %s", p)
	}
}

// TestDiffTimeoutClosesBeforeTheNextDiff bounds a diff (10 minutes by
// default, 300 ms here): the wait ends with ErrDiffTimeout, and the diff is
// closed in the editor before the next one, of the same file, is shown,
// so that the close cannot hit the newer diff.
func TestDiffTimeoutClosesBeforeTheNextDiff(t *testing.T) {
	e := startCompanion(t)
	o := e.options(e.ws)
	o.DiffTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	path := e.file("t.txt", "t")
	first := make(chan error, 1)
	go func() { _, err := c.OpenDiff(ctx, path, "first"); first <- err }()
	waitFor(t, e.ed.opened, "first diff")
	second := make(chan DiffOutcome, 1)
	go func() { o, _ := c.OpenDiff(ctx, path, "second"); second <- o }()
	if err := waitFor(t, first, "the first diff to time out"); !errors.Is(err, ErrDiffTimeout) || err.Error() != "no answer to the diff within 300ms" {
		t.Fatalf("err = %v, want ErrDiffTimeout naming the configured 300ms", err)
	}
	waitFor(t, e.ed.opened, "second diff")
	e.ed.mu.Lock()
	log, open := append([]string(nil), e.ed.log...), e.ed.diffs[path]
	e.ed.mu.Unlock()
	want := []string{"open " + path, "close " + path, "open " + path}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Errorf("editor saw %q, want %q", log, want)
	}
	if open != "second" {
		t.Errorf("the editor shows %q, want the second diff", open)
	}
	e.ed.answer(path)
	e.srv.DiffAccepted(path, "second")
	if o := waitFor(t, second, "second answer"); !o.Accepted {
		t.Errorf("second outcome %+v", o)
	}
}

func TestCloseClosesPendingDiffs(t *testing.T) {
	e := startCompanion(t)
	c := e.connect()
	path := e.file("x.txt", "x")
	errs := make(chan error, 1)
	go func() { _, err := c.OpenDiff(context.Background(), path, "y"); errs <- err }()
	waitFor(t, e.ed.opened, "diff shown")
	states := make(chan State, 4)
	c.OnStateChange(func(s State) { states <- s })
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := waitFor(t, e.ed.closed, "pending diff closed"); p != path {
		t.Errorf("closed %s", p)
	}
	if err := waitFor(t, errs, "OpenDiff returns"); !errors.Is(err, ErrClosed) {
		t.Errorf("err = %v", err)
	}
	if s := waitFor(t, states, "state"); s.Status != Disconnected {
		t.Errorf("state %+v", s)
	}
	if c.Context() != nil {
		t.Error("context kept after disconnect")
	}
}

func TestTwoClients(t *testing.T) {
	e := startCompanion(t)
	c1, c2 := e.connect(), e.connect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u1, u2 := make(chan *ide.Context, 8), make(chan *ide.Context, 8)
	c1.OnContext(func(v *ide.Context) { u1 <- v })
	c2.OnContext(func(v *ide.Context) { u2 <- v })
	f := e.file("shared.go", "x")
	e.srv.Focus(f, nil, "")
	for _, u := range []chan *ide.Context{u1, u2} {
		for {
			v := waitFor(t, u, "context on both clients")
			if v != nil && v.WorkspaceState != nil && len(v.WorkspaceState.OpenFiles) == 1 {
				break
			}
		}
	}
	// Each client's diff and closeDiff answer go to that client.
	p1, p2 := e.file("c1.txt", "1"), e.file("c2.txt", "2")
	r1, r2 := make(chan DiffOutcome, 1), make(chan DiffOutcome, 1)
	go func() { o, _ := c1.OpenDiff(ctx, p1, "from c1"); r1 <- o }()
	go func() { o, _ := c2.OpenDiff(ctx, p2, "from c2"); r2 <- o }()
	waitFor(t, e.ed.opened, "diff")
	waitFor(t, e.ed.opened, "diff")
	content, ok, err := c1.CloseDiff(ctx, p2)
	if err != nil || !ok || content != "from c2" {
		t.Errorf("c1 closing c2's diff: %q %v %v", content, ok, err)
	}
	e.ed.answer(p1)
	e.srv.DiffAccepted(p1, "from c1")
	if o := waitFor(t, r1, "c1 outcome"); !o.Accepted || o.Content != "from c1" {
		t.Errorf("c1 outcome %+v", o)
	}
	if err := c2.ResolveDiffFromCLI(ctx, p2, true); err != nil {
		t.Fatal(err)
	}
	if o := waitFor(t, r2, "c2 outcome"); !o.Accepted {
		t.Errorf("c2 outcome %+v", o)
	}
}

// TestServerGoesAway: a companion that stops rejects the diff that waits
// (a CLI left waiting keeps its question on screen), then the client
// sees the connection lost. A companion killed outright cannot answer:
// its pending diff fails with ErrDisconnected (companions_test.go).
func TestServerGoesAway(t *testing.T) {
	e := startCompanion(t)
	c := e.connect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitContext(ctx); err != nil {
		t.Fatal(err)
	}
	states := make(chan State, 4)
	c.OnStateChange(func(s State) { states <- s })
	path := e.file("gone.txt", "x")
	type result struct {
		out DiffOutcome
		err error
	}
	res := make(chan result, 1)
	go func() { o, err := c.OpenDiff(context.Background(), path, "y"); res <- result{o, err} }()
	waitFor(t, e.ed.opened, "diff shown")

	e.stop()
	<-e.served
	e.served <- nil // for the cleanup
	s := waitFor(t, states, "disconnected state")
	if s.Status != Disconnected || !strings.Contains(s.Details, "lost") {
		t.Errorf("state %+v", s)
	}
	if r := waitFor(t, res, "the pending diff's answer"); r.err != nil || r.out.Accepted {
		t.Errorf("pending diff: %+v, %v; want it rejected", r.out, r.err)
	}
	if c.Context() != nil || c.DiffingEnabled() {
		t.Error("context or diffing kept after the server went away")
	}
	if _, err := c.OpenDiff(context.Background(), path, "z"); err == nil {
		t.Error("OpenDiff after disconnect succeeded")
	}
}

func TestConnectRefusals(t *testing.T) {
	e := startCompanion(t)
	outside := t.TempDir()
	_, plan, err := Connect(context.Background(), e.options(outside))
	var ce *ConnectError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Message, "Directory mismatch.") || !strings.Contains(ce.Message, e.ws) {
		t.Errorf("outside the workspace: %v", err)
	}
	if plan == nil || plan.Choice.Chosen == nil {
		t.Fatal("no plan")
	}

	// A wrong token in the environment, and no file: the companion refuses.
	o := e.options(e.ws)
	o.Dir = t.TempDir()
	env := map[string]string{
		ide.EnvServerPort:    strconvItoa(e.srv.Port()),
		ide.EnvWorkspacePath: e.ws,
		ide.EnvAuthToken:     "wrong",
		"TERM_PROGRAM":       "vscode",
		"SSH_CONNECTION":     "x",
	}
	o.Getenv = func(k string) string { return env[k] }
	_, plan, err = Connect(context.Background(), o)
	var de *DialError
	if !errors.As(err, &ce) || len(ce.Attempts) != 1 || !errors.As(ce.Attempts[0].Err, &de) || de.Kind != "unauthorized" {
		t.Errorf("wrong token: %v %+v", err, ce)
	}
	if plan.WorkspaceSource != "env" || plan.TokenSource != "env" || plan.Endpoints[0].Source != "env" {
		t.Errorf("env plan %+v", plan)
	}
	// The right token from the environment connects.
	env[ide.EnvAuthToken] = e.srv.Token()
	c, _, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatalf("env connect: %v", err)
	}
	c.Close(context.Background())
	// Without ideInfo and outside a known terminal, the real CLI refuses
	// (detectIde in gemini-cli 0.61.0 packages/core/src/ide/detect-ide.ts).
	delete(env, "TERM_PROGRAM")
	if _, _, err := Connect(context.Background(), o); err == nil || err.Error() != ErrUnsupportedEnvironment.Error() || !errors.Is(err, ErrUnsupportedEnvironment) {
		t.Errorf("TERM_PROGRAM gate: %v", err)
	}
	// A port the CLI will not dial.
	env["TERM_PROGRAM"] = "vscode"
	env[ide.EnvServerPort] = "70000"
	if _, _, err := Connect(context.Background(), o); !errors.As(err, &ce) || !errors.As(ce.Attempts[0].Err, &de) || de.Kind != "bad-port" {
		t.Errorf("bad port: %v", err)
	}
	// A closed port.
	env[ide.EnvServerPort] = strconvItoa(gemkittest.ClosedPort(t))
	if _, _, err := Connect(context.Background(), o); !errors.As(err, &ce) || !errors.As(ce.Attempts[0].Err, &de) || de.Kind != "refused" {
		t.Errorf("closed port: %v", err)
	}
}

func TestDiscoveryFileFromCompanion(t *testing.T) {
	e := startCompanion(t)
	ch, err := discovery.Choose(discovery.ChooseOptions{Dir: e.dir, IDEPID: os.Getpid(), Cwd: e.ws})
	if err != nil || ch.Chosen == nil || ch.Chosen.Mode != 0o600 || ch.Chosen.Contents.Port != e.srv.Port() {
		t.Fatalf("choose: %v %+v", err, ch)
	}
}

func strconvItoa(n int) string { return strconv.Itoa(n) }

// The timeout error names the timeout that ran out, not a fixed one.
func TestDiffTimeoutErrorNamesTheTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{ide.DiffTimeout, "no answer to the diff within 10m"},
		{90 * time.Second, "no answer to the diff within 1m30s"},
		{300 * time.Millisecond, "no answer to the diff within 300ms"},
	} {
		err := error(diffTimeoutError{tc.after})
		if err.Error() != tc.want || !errors.Is(err, ErrDiffTimeout) {
			t.Errorf("%v: %q (Is ErrDiffTimeout: %v), want %q", tc.after, err, errors.Is(err, ErrDiffTimeout), tc.want)
		}
	}
}
