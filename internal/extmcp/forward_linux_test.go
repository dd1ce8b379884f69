package extmcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/mcpwire"
)

// forwarded is what a Forward's done received.
type forwarded struct {
	res string
	err error
}

// forwardOnce forwards a call of tool and waits for its answer; ok is
// false when Forward did not take it.
func forwardOnce(t *testing.T, m *extmcp.Manager, sp extmcp.Spec, tool string, args any) (res string, err error, ok bool) {
	t.Helper()
	ch, _, ok := forwardAsync(t, m, sp, tool, args)
	if !ok {
		return "", nil, false
	}
	return waitForwarded(t, tool, ch)
}

// forwardCall is forwardOnce for a call of a running server, which
// Forward takes unless another goroutine holds the server's state at
// that moment (its contract: the caller then calls Call): tried again
// until taken, within 30 s. CI's run saw one such moment, at load.
func forwardCall(t *testing.T, m *extmcp.Manager, sp extmcp.Spec, tool string, args any) (res string, err error, ok bool) {
	t.Helper()
	var ch chan forwarded
	gemkittest.Poll(30*time.Second, time.Millisecond, func() bool {
		ch, _, ok = forwardAsync(t, m, sp, tool, args)
		return ok
	})
	if !ok {
		return "", nil, false
	}
	return waitForwarded(t, tool, ch)
}

// waitForwarded waits for the answer of a forwarded call of tool.
func waitForwarded(t *testing.T, tool string, ch chan forwarded) (res string, err error, ok bool) {
	t.Helper()
	select {
	case a := <-ch:
		return a.res, a.err, true
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: no answer within 2 minutes", tool)
		return "", nil, false
	}
}

func forwardAsync(t *testing.T, m *extmcp.Manager, sp extmcp.Spec, tool string, args any) (chan forwarded, func(), bool) {
	t.Helper()
	a, _ := json.Marshal(args)
	ch := make(chan forwarded, 1)
	cancel, ok := m.Forward(sp.Key(), tool, a, nil, func(res json.RawMessage, err error) { ch <- forwarded{string(res), err} })
	return ch, cancel, ok
}

// sameValue reports whether a and b are the same JSON value.
func sameValue(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

// TestForwardAsCall: a call Forward takes (the server running) answers
// what Call answers, in the same words: a result (as the server wrote
// it; one the server asked gemkit something for during the call), what
// the sandbox refused during the call added to it (a host, and
// a refused write a tool error tells of), the timeout, the server's death
// mid-call, an overlong message; a call given up gets no answer and the
// server keeps answering; a server not running is not taken (Call
// starts it).
func TestForwardAsCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts sandboxed servers and waits out a call's bound: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fx.Timeout = 5 * time.Second
	// The flood's bound is the 16 MiB frame, not the clock: its own
	// server has a bound a loaded machine's race build cannot reach
	// while 16 MiB go through (fx's 5 s did, at load 30).
	fl := s.spec("flooded", filepath.Join(s.ext, "fixture.mjs"))
	fl.Timeout = 90 * time.Second
	every := s.spec("everything", s.script("server-everything"))
	s.m.Sync([]extmcp.Spec{fx, fl, every})
	if _, _, ok := forwardOnce(t, s.m, fx, "ok", map[string]any{}); ok {
		t.Error("Forward took a call of a server not started")
	}
	if _, failed := s.m.Tools(context.Background()); len(failed) > 0 {
		t.Fatal(failed[0].Err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	forwardAnswered(t, s, fx, every, ln.Addr().String())
	forwardHang(t, s, fx)
	forwardDeath(t, s, fx, fl)
}

// forwardAnswered: a forwarded call answers the same result as Call,
// refusals (of a connection to target) and refused writes added.
func forwardAnswered(t *testing.T, s *setup, fx, every extmcp.Spec, target string) {
	for _, c := range []struct {
		sp   extmcp.Spec
		tool string
		args map[string]any
		said string
	}{
		{every, "echo", map[string]any{"message": "<b>hi</b> & ünï"}, "Echo: <b>hi</b> & ünï"},
		{every, "get-structured-content", map[string]any{"location": "New York"}, ""},
		{every, "get-sum", map[string]any{"a": "not a number"}, "Invalid arguments"},
		{fx, "ok", map[string]any{}, "ok"},
		// The server asks gemkit's client for its roots during the call:
		// the workspace, the folder the sandbox shows it at its own path.
		{fx, "roots", map[string]any{}, `\"uri\":\"file://` + s.ws + `\"`},
		{fx, "proxied", map[string]any{"url": "http://" + target + "/"}, "gemkit extensions sandbox realmcp --allow-host " + target},
		{fx, "write", map[string]any{"path": filepath.Join(s.ws, "planted.txt")}, "--allow-write workspace"},
	} {
		got, err, ok := forwardCall(t, s.m, c.sp, c.tool, c.args)
		if !ok || err != nil {
			t.Errorf("%s: forwarded %v, taken %v", c.tool, err, ok)
			continue
		}
		a, _ := json.Marshal(c.args)
		want, err := s.m.Call(context.Background(), c.sp.Key(), c.tool, a, nil)
		if err != nil {
			t.Errorf("%s: Call: %v", c.tool, err)
			continue
		}
		if !sameValue(got, string(want)) {
			t.Errorf("%s: forwarded\n%s\nCall\n%s", c.tool, got, want)
		}
		if !strings.Contains(got, c.said) {
			t.Errorf("%s: %s does not say %q", c.tool, got, c.said)
		}
	}
}

// forwardHang: a call past its bound fails in the words of Call; one
// given up gets no answer, and the server keeps answering.
func forwardHang(t *testing.T, s *setup, fx extmcp.Spec) {
	start := time.Now()
	if _, err, ok := forwardCall(t, s.m, fx, "hang", map[string]any{}); !ok || err == nil || !strings.Contains(err.Error(), "extension realmcp's MCP server fixture did not answer hang within 5s") {
		t.Errorf("hang: %v (taken %v)", err, ok)
	}
	t.Logf("hang came back after %s", time.Since(start))
	var ch chan forwarded
	var cancel func()
	ok := gemkittest.Poll(30*time.Second, time.Millisecond, func() (taken bool) {
		ch, cancel, taken = forwardAsync(t, s.m, fx, "hang", map[string]any{})
		return taken
	})
	if !ok {
		t.Fatal("a second hang was not taken")
	}
	cancel()
	if got, err, ok := forwardCall(t, s.m, fx, "ok", map[string]any{}); !ok || err != nil || !strings.Contains(got, `"ok"`) {
		t.Errorf("ok after a call given up: %s %v %v", got, err, ok)
	}
	select {
	case a := <-ch:
		t.Errorf("a call given up was answered: %+v", a)
	case <-time.After(fx.Timeout + time.Second): // past its bound: no timeout answers it either
	}
}

// forwardDeath: the server's death mid-call and an overlong message (from
// fl, whose bound is long) fail in the words of Call.
func forwardDeath(t *testing.T, s *setup, fx, fl extmcp.Spec) {
	if _, err, ok := forwardCall(t, s.m, fx, "die", map[string]any{}); !ok || err == nil ||
		!strings.Contains(err.Error(), "exited during the call of die; it is started again at the next call") || !strings.Contains(err.Error(), "asked to die") {
		t.Errorf("die: %v (taken %v)", err, ok)
	}
	waitFor(t, func() bool { _, _, ok := forwardOnce(t, s.m, fx, "ok", map[string]any{}); return !ok })
	if text, _, err := call(t, s.m, fx, "ok", map[string]any{}); err != nil || text != "ok" {
		t.Fatalf("ok after the death: %q %v", text, err)
	}
	if _, _, err := call(t, s.m, fl, "ok", map[string]any{}); err != nil {
		t.Fatalf("starting the flooded server: %v", err)
	}
	if _, err, ok := forwardCall(t, s.m, fl, "flood", map[string]any{}); !ok || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("printed a message over %d MiB on its stdout during the call of flood", mcpwire.MaxMessage>>20)) {
		t.Errorf("flood: %v (taken %v)", err, ok)
	}
}
