package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/testcompanion"
)

func runCheck(t *testing.T, dir, ws string) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := Run(ctx, Options{Client: client.Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Getenv: func(k string) string {
		if k == "SSH_CONNECTION" {
			return "x"
		}
		return ""
	}}, Settle: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBrokenCompanions(t *testing.T) {
	tests := []struct {
		name   string
		flaws  testcompanion.Flaws
		failed []string // the checks that must fail, and only they
	}{
		{"correct", testcompanion.Flaws{}, nil},
		{"wrong mode", testcompanion.Flaws{FileMode: 0o644}, []string{"discovery.mode"}},
		{"no auth", testcompanion.Flaws{NoAuth: true}, []string{"http.auth-missing", "http.auth-wrong"}},
		{"origin accepted", testcompanion.Flaws{AcceptOrigin: true}, []string{"http.origin"}},
		{"any host", testcompanion.Flaws{AcceptHost: true}, []string{"http.host"}},
		{"closeDiff text not JSON", testcompanion.Flaws{CloseDiffText: true}, []string{"diff.open-close"}},
		{"closeDiff also notifies", testcompanion.Flaws{NotifyOnClose: true}, []string{"diff.open-close"}},
		{"null in context", testcompanion.Flaws{NullInContext: true}, []string{"mcp.initial-context"}},
		{"no ideInfo", testcompanion.Flaws{NoIDEInfo: true}, []string{"discovery.ideInfo", "discovery.fields"}},
		{"GET 405", testcompanion.Flaws{GET405: true}, []string{"mcp.initial-context", "client.context"}},
		{"no closeDiff", testcompanion.Flaws{NoCloseDiff: true}, []string{"mcp.tools", "client.diffing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			b, err := testcompanion.Start(tt.flaws, dir, ws)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			r := runCheck(t, dir, ws)
			want := map[string]bool{}
			for _, id := range tt.failed {
				want[id] = true
			}
			for _, res := range r.Results {
				if (res.Outcome == Fail) != want[res.ID] {
					t.Errorf("%s: %s %s", res.ID, res.Outcome, res.Detail)
				}
				delete(want, res.ID)
			}
			for id := range want {
				t.Errorf("check %s did not run", id)
			}
		})
	}
}

// testEditor answers the companion's diffs like an editor in which the
// person does nothing until asked.
type testEditor struct {
	mu    sync.Mutex
	diffs map[string]string
	shown chan string
}

func (e *testEditor) OpenDiff(_ context.Context, p, c string) error {
	e.mu.Lock()
	e.diffs[p] = c
	e.mu.Unlock()
	e.shown <- p
	return nil
}

func (e *testEditor) CloseDiff(_ context.Context, p string) (string, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.diffs[p]
	delete(e.diffs, p)
	return c, ok, nil
}

func (e *testEditor) FileWritten(context.Context, string) error { return nil }

// TestOurCompanionPasses runs every check, the interactive ones included,
// against our companion; the "person" accepts the first diff (with an
// edit) and rejects the second.
func TestOurCompanionPasses(t *testing.T) {
	root := t.TempDir()
	dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ed := &testEditor{diffs: map[string]string{}, shown: make(chan string, 8)}
	srv, err := companion.New(companion.Config{Workspace: []string{ws}, PID: os.Getpid(), Editor: ed, DiscoveryDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-srv.Ready()
	go func() {
		n := 0
		for p := range ed.shown {
			ed.mu.Lock()
			c := ed.diffs[p]
			ed.mu.Unlock()
			switch {
			case c == "gemkit ide check: accept me\n":
				srv.DiffAccepted(p, c+"edited\n")
			case c == "gemkit ide check: reject me\n":
				srv.DiffRejected(p)
			default:
				continue
			}
			if n++; n == 2 {
				return
			}
		}
	}()
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	// The person is asked only once the diff is on screen.
	prompts := 0
	out := writerFunc(func(b []byte) {
		if !strings.Contains(string(b), "is open in your editor") {
			return
		}
		prompts++
		ed.mu.Lock()
		defer ed.mu.Unlock()
		if len(ed.diffs) == 0 {
			t.Errorf("asked before the diff is shown: %s", b)
		}
	})
	r, err := Run(rctx, Options{Interactive: true, Out: out, Client: client.Options{Dir: dir, Cwd: ws, IDEPID: os.Getpid(), Getenv: func(k string) string {
		if k == "SSH_CONNECTION" {
			return "x"
		}
		return ""
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		if res.Outcome != Pass {
			t.Errorf("%s: %s %s", res.ID, res.Outcome, res.Detail)
		}
	}
	if len(r.Results) < 20 {
		t.Errorf("only %d checks", len(r.Results))
	}
	if prompts != 2 {
		t.Errorf("%d prompts, want 2", prompts)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

// TestDiscoveryFieldsReportIsStable: a file with several null fields is
// reported the same way every run (it was in map order).
func TestDiscoveryFieldsReportIsStable(t *testing.T) {
	dir, ws := filepath.Join(t.TempDir(), "gemini", "ide"), t.TempDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "gemini-ide-server-1-2.json")
	if err := os.WriteFile(name, []byte(`{"port":2,"workspacePath":"`+ws+`","stdio":null,"authToken":null,"ideInfo":null,"x":null}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := client.Discover(context.Background(), client.Options{Dir: dir, Cwd: ws, IDEPID: 1, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	const want = "authToken is null; ideInfo is null; stdio is null; x is null"
	for range 20 {
		e := &env{plan: p, r: &Report{}}
		e.run(discoveryChecks)
		if res, _ := e.r.Get("discovery.fields"); !strings.HasPrefix(res.Detail, want) {
			t.Fatalf("detail %q, want it to start with %q", res.Detail, want)
		}
	}
}

func TestContextProblems(t *testing.T) {
	tests := map[string]int{
		`{}`: 0,
		`{"workspaceState":{"openFiles":[{"path":"/a","timestamp":1,"isActive":true,"cursor":{"line":1,"character":1},"selectedText":"x"}],"isTrusted":false}}`: 0,
		`{"workspaceState":null}`:                                                                              1,
		`{"workspaceState":{"openFiles":null}}`:                                                                1,
		`{"workspaceState":{"openFiles":[{"path":"/a","timestamp":"1"}]}}`:                                     1,
		`{"workspaceState":{"openFiles":[{"timestamp":1,"cursor":null}]}}`:                                     2,
		`{"workspaceState":{"isTrusted":"yes","openFiles":[{"path":"/a","timestamp":1,"cursor":{"line":1}}]}}`: 2,
		`[]`: 1,
	}
	for in, n := range tests {
		if p := ContextProblems(json.RawMessage(in)); len(p) != n {
			t.Errorf("ContextProblems(%s) = %v; want %d problems", in, p, n)
		}
	}
}

// TestRunLeavesNothingRunning: a library caller may run checks again and
// again; no connection or goroutine of a run may outlive it.
func TestRunLeavesNothingRunning(t *testing.T) {
	root := t.TempDir()
	dir, ws := filepath.Join(root, "gemini", "ide"), filepath.Join(root, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := testcompanion.Start(testcompanion.Flaws{}, dir, ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	runCheck(t, dir, ws) // warm up what lives for the whole process
	before := runtime.NumGoroutine()
	for range 3 {
		runCheck(t, dir, ws)
	}
	// The companion's own per-request goroutines wind down too.
	gemkittest.WaitGoroutines(t, before+2, "after 3 runs")
}
