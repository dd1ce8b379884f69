package extmcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// kept is what TestKeptCatalog's cases share: a fixture server held until
// the workspace holds "release", listed once so that its catalog is kept.
type kept struct {
	parent   *testing.T // owns the Managers the cases make
	s        *setup
	held     extmcp.Spec
	first    []extmcp.Tool // the first listing, from the started server
	keptFile string
	original []byte // keptFile as the first listing wrote it
}

// newKept starts the fixture once and checks the catalog it leaves: one
// file, 0600.
func newKept(t *testing.T) *kept {
	k := &kept{parent: t, s: newSetup(t, 30*time.Second)}
	// The fixture, started only once the workspace holds "release", and
	// failing at once while it holds "fail".
	k.held = k.s.spec("fixture", "-c", `if [ -e fail ]; then echo broken on purpose >&2; exit 3; fi
while [ ! -e release ]; do sleep 0.02; done
exec node "$0"`, filepath.Join(k.s.ext, "fixture.mjs"))
	k.held.Command = "sh"
	k.mark(t, "release", true)
	k.s.m.Sync([]extmcp.Spec{k.held})
	first, failed := k.s.m.Tools(context.Background())
	if len(failed) > 0 || !toolNames(first, "fixture")["ok"] {
		t.Fatalf("the first listing: %v, %+v\n%s", toolNames(first, "fixture"), failed, k.s.log.String())
	}
	k.first = first
	keptDir := filepath.Join(k.s.home, ".local", "share", "gemkit", "server-catalogs")
	files, _ := filepath.Glob(filepath.Join(keptDir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("kept catalogs %v, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the kept catalog: %v, %v", fi.Mode(), err)
	}
	k.keptFile = files[0]
	k.original, _ = os.ReadFile(k.keptFile)
	return k
}

// mark puts name in the workspace (on) or takes it away: "release" lets
// the fixture start, "fail" makes it fail.
func (k *kept) mark(t *testing.T, name string, on bool) {
	t.Helper()
	p := filepath.Join(k.s.ws, name)
	if !on {
		os.Remove(p)
		return
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// manager is another gemkit mcp of the same person, whose consent check
// is allowed (nil: none). It lives until the whole test ends, as the
// servers it started do.
func (k *kept) manager(sp extmcp.Spec, allowed func() error) (*extmcp.Manager, <-chan extmcp.Event) {
	l := &sandbox.Launcher{}
	k.parent.Cleanup(func() { l.Close() })
	m := extmcp.NewManager(extmcp.Config{Launcher: l, Workspace: k.s.ws, Timeout: 30 * time.Second,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + k.s.home}})
	k.parent.Cleanup(m.Close)
	events := make(chan extmcp.Event, 16)
	m.Listen(func(ev extmcp.Event) {
		select {
		case events <- ev:
		default:
		}
	})
	sp.Allowed = allowed
	m.Sync([]extmcp.Spec{sp})
	return m, events
}

// listChanged waits for the listener to hear that the lists changed.
func listChanged(t *testing.T, events <-chan extmcp.Event) {
	t.Helper()
	for {
		select {
		case ev := <-events:
			if ev.Method == "notifications/tools/list_changed" {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the listener did not hear that the lists changed")
		}
	}
}

// TestKeptCatalog: what a server listed is kept (0600, by what starts
// it), and another Manager (another gemkit mcp) answers its first
// listing from there once consent is checked, before the server has
// started; the server, started behind the answer, confirms it, replaces
// it (the listener hears the lists changed), or, when it cannot start,
// takes its tools away and the next listing says why. Without consent
// nothing kept is answered; the answer and the start make one consent
// check; a Manager closed during that start does not wait for it; and
// a server started otherwise is listed afresh.
func TestKeptCatalog(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts servers of its own: runs without -short, as in CI")
	}
	k := newKept(t)
	for _, c := range []struct {
		name string
		run  func(*testing.T, *kept)
	}{
		{"answered before the start", keptAnsweredBeforeStart},
		{"checked ahead", keptCheckedAhead},
		{"checked ahead too long ago", keptCheckedTooLongAgo},
		{"nothing kept, nothing checked", keptNothingChecked},
		{"the call first", keptCallFirst},
		{"closed while starting", keptClosedWhileStarting},
		{"replaced", keptReplaced},
		{"cannot start", keptCannotStart},
		{"refused", keptRefused},
		{"started otherwise", keptStartedOtherwise},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, k) })
	}
}

// keptAnsweredBeforeStart: the server cannot answer before "release", so
// an answer before it is the kept one; the answer and the start behind
// it make one consent check.
func keptAnsweredBeforeStart(t *testing.T, k *kept) {
	k.mark(t, "release", false)
	var checks atomic.Int32
	m, _ := k.manager(k.held, func() error { checks.Add(1); return nil })
	tools, failed := m.Tools(context.Background())
	k.mark(t, "release", true)
	if len(failed) > 0 || len(tools) != len(k.first) || !toolNames(tools, "fixture")["ok"] {
		t.Fatalf("answered %v, %+v; want the kept tools", toolNames(tools, "fixture"), failed)
	}
	if text, _, err := call(t, m, k.held, "ok", map[string]any{}); err != nil || text != "ok" {
		t.Errorf("a call after the kept answer: %q %v", text, err)
	}
	if n := checks.Load(); n != 1 {
		t.Errorf("%d consent checks for the answer and the start behind it, want one", n)
	}
}

// keptCheckedAhead: Prepare begins the check before any client asks; the
// answer and the start behind it take its verdict, not one of their own,
// and the answer the kept catalog Prepare read: with the file gone since
// and the server held, it comes all the same.
func keptCheckedAhead(t *testing.T, k *kept) {
	var checks atomic.Int32
	began := make(chan struct{}, 4)
	m, _ := k.manager(k.held, func() error { checks.Add(1); began <- struct{}{}; return nil })
	m.Prepare()
	select {
	case <-began:
	case <-time.After(30 * time.Second):
		t.Fatal("Prepare began no consent check")
	}
	k.mark(t, "release", false)
	aside := k.keptFile + ".aside"
	if err := os.Rename(k.keptFile, aside); err != nil {
		t.Fatal(err)
	}
	tools, failed := m.Tools(context.Background())
	if err := os.Rename(aside, k.keptFile); err != nil {
		t.Fatal(err)
	}
	k.mark(t, "release", true)
	if len(failed) > 0 || !toolNames(tools, "fixture")["ok"] {
		t.Fatalf("answered %v, %+v; want the kept tools", toolNames(tools, "fixture"), failed)
	}
	if text, _, err := call(t, m, k.held, "ok", map[string]any{}); err != nil || text != "ok" {
		t.Errorf("a call after the answer: %q %v", text, err)
	}
	if n := checks.Load(); n != 1 {
		t.Errorf("%d consent checks, want the one begun ahead", n)
	}
}

// keptCheckedTooLongAgo: a check begun ahead and older than aheadFor at
// the first list is made again: the extension changed meanwhile (the
// second check refuses), and the server must not start from the first
// verdict.
func keptCheckedTooLongAgo(t *testing.T, k *kept) {
	refused := "you have not agreed to the extension realmcp as it is now"
	var checks atomic.Int32
	m, _ := k.manager(k.held, func() error {
		if checks.Add(1) > 1 {
			return errors.New(refused)
		}
		return nil
	})
	m.Prepare()
	if !extmcp.AgeConsent(m, k.held.Key(), 2*time.Second) {
		t.Fatal("Prepare began no consent check")
	}
	tools, failed := m.Tools(context.Background())
	if len(tools) > 0 || len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), refused) {
		t.Fatalf("answered %v, %+v; want the new check's refusal", toolNames(tools, "fixture"), failed)
	}
	if _, _, err := call(t, m, k.held, "ok", map[string]any{}); err == nil || !strings.Contains(err.Error(), refused) {
		t.Errorf("a call: %v, want the refusal", err)
	}
	if n := checks.Load(); n < 2 {
		t.Errorf("%d consent checks, want the old one made again", n)
	}
}

// keptNothingChecked: a server never listed has no kept catalog: nothing
// tells that a client will start it, and Prepare leaves it alone.
func keptNothingChecked(t *testing.T, k *kept) {
	other := k.held
	other.Args = append(slices.Clone(k.held.Args), "--never-listed")
	var checks atomic.Int32
	m, _ := k.manager(other, func() error { checks.Add(1); return nil })
	m.Prepare()
	m.Close()
	if n := checks.Load(); n != 0 {
		t.Errorf("%d consent checks for a server never listed", n)
	}
}

// keptCallFirst: a call made while the server starts behind the kept
// answer reaches it before the listing that confirms the answer: the
// server answers in the order it reads.
func keptCallFirst(t *testing.T, k *kept) {
	k.mark(t, "release", false)
	defer k.mark(t, "release", true)
	m, _ := k.manager(k.held, nil)
	if tools, _ := m.Tools(context.Background()); !toolNames(tools, "fixture")["ok"] {
		t.Fatalf("answered %v, want the kept tools", toolNames(tools, "fixture"))
	}
	type answer struct {
		raw json.RawMessage
		err error
	}
	got := make(chan answer, 1)
	go func() {
		raw, err := m.Call(context.Background(), k.held.Key(), "seen", json.RawMessage(`{}`), nil)
		got <- answer{raw, err}
	}()
	// No event says that the call waits for the start's lock.
	var a answer
	early := false
	if !gemkittest.Poll(30*time.Second, 5*time.Millisecond, func() bool {
		select {
		case a = <-got:
			early = true
			return true
		default:
		}
		return extmcp.Queued(m, k.held.Key()) > 0
	}) {
		t.Fatal("the call did not wait for the start")
	}
	if early {
		t.Fatalf("the call was answered before the server could start: %s %v", a.raw, a.err)
	}
	k.mark(t, "release", true)
	a = <-got
	if a.err != nil {
		t.Fatal(a.err)
	}
	if s := string(a.raw); !strings.Contains(s, "initialize") || strings.Contains(s, "/list") {
		t.Errorf("the server had read %s before the call; want initialize and no listing", s)
	}
}

// keptClosedWhileStarting: the start waits for "release" for up to 20 s
// (MaxStart); what works for no caller stops when the Manager closes.
func keptClosedWhileStarting(t *testing.T, k *kept) {
	k.mark(t, "release", false)
	defer k.mark(t, "release", true)
	m, _ := k.manager(k.held, nil)
	if tools, _ := m.Tools(context.Background()); len(tools) == 0 {
		t.Fatal("no kept tools answered")
	}
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the start behind the kept answer")
	}
}

// keptReplaced: a kept catalog that the started server's listing
// contradicts is replaced, and the listener hears the lists changed.
func keptReplaced(t *testing.T, k *kept) {
	var kc map[string]any
	if err := json.Unmarshal(k.original, &kc); err != nil {
		t.Fatal(err)
	}
	kc["tools"] = append(kc["tools"].([]any), map[string]any{"name": "gone_since", "inputSchema": map[string]any{"type": "object"}})
	b, _ := json.Marshal(kc)
	if err := os.WriteFile(k.keptFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	m, events := k.manager(k.held, nil)
	if tools, _ := m.Tools(context.Background()); !toolNames(tools, "fixture")["gone_since"] {
		t.Fatalf("answered %v, want the kept tools", toolNames(tools, "fixture"))
	}
	listChanged(t, events)
	tools, failed := m.Tools(context.Background())
	if names := toolNames(tools, "fixture"); len(failed) > 0 || names["gone_since"] || !names["ok"] {
		t.Errorf("after the server listed: %v, %+v", names, failed)
	}
	if b, _ := os.ReadFile(k.keptFile); strings.Contains(string(b), "gone_since") || !strings.Contains(string(b), `"ok"`) {
		t.Errorf("the kept catalog was not replaced: %s", b)
	}
}

// keptCannotStart: a server that cannot start behind the kept answer
// takes its tools away, and the next listing says why.
func keptCannotStart(t *testing.T, k *kept) {
	k.mark(t, "fail", true)
	defer k.mark(t, "fail", false)
	m, events := k.manager(k.held, nil)
	if tools, _ := m.Tools(context.Background()); !toolNames(tools, "fixture")["ok"] {
		t.Fatalf("answered %v, want the kept tools", toolNames(tools, "fixture"))
	}
	listChanged(t, events)
	tools, failed := m.Tools(context.Background())
	if len(tools) > 0 || len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), "broken on purpose") {
		t.Errorf("after the start failed: %v, %+v; want no tools and why", toolNames(tools, "fixture"), failed)
	}
}

// keptRefused: without consent nothing kept is answered.
func keptRefused(t *testing.T, k *kept) {
	refused := "you have not agreed to the extension realmcp as it is now"
	m, events := k.manager(k.held, func() error { return errors.New(refused) })
	tools, failed := m.Tools(context.Background())
	if len(tools) > 0 || len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), refused) {
		t.Errorf("without consent: %v, %+v; want no tools and why", toolNames(tools, "fixture"), failed)
	}
	// The start behind it was refused by the same check, which was
	// the answer: nothing changed to tell of, and the next listing
	// tries again.
	select {
	case ev := <-events:
		if ev.Method == "notifications/tools/list_changed" {
			t.Errorf("a refused answer was followed by %s", ev.Method)
		}
	case <-time.After(500 * time.Millisecond):
	}
	if _, failed := m.Tools(context.Background()); len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), refused) {
		t.Errorf("the next listing: %+v", failed)
	}
}

// keptStartedOtherwise: not released, a server started another way is
// not answered for from what another start listed, so this listing waits
// for it, and fails when it cannot start.
func keptStartedOtherwise(t *testing.T, k *kept) {
	k.mark(t, "release", false)
	defer k.mark(t, "release", true)
	other := k.held
	other.Args = append(slices.Clone(k.held.Args), "--other")
	other.Timeout = 2 * time.Second
	m, _ := k.manager(other, nil)
	tools, failed := m.Tools(context.Background())
	if len(tools) > 0 || len(failed) != 1 {
		t.Errorf("%v, %+v; want the server's start to fail, no kept tools", toolNames(tools, "fixture"), failed)
	}
}
