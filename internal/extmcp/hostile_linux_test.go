package extmcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestHostileServers: a server that floods its stdout with one endless
// message, one that sends a storm of notifications, one that leaves a
// process behind in a session of its own that ignores SIGTERM, one that
// itself ignores SIGTERM, and one that asks for a terminal. Each call
// comes back within its bound with words naming the server, the other
// servers keep answering, and nothing is left running once the client
// goes (issue 38's bad input). The bounds are a loaded machine's: what
// ends the flood is the 16 MiB frame bound, however long the SDK takes to
// read them (over 5 s, once, beside other work at load 7 to 17), the
// calls' bound is a hang's, and the servers' ends are given 30 s, the
// time they took logged.
func TestHostileServers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts several sandboxed servers (about 10 s): runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	// No call here is meant to run out its bound, so it is a hang's, and
	// the starts, also bounded by it, have a loaded machine's time.
	bound := time.Minute
	fixture := func(name string) extmcp.Spec {
		sp := s.spec(name, filepath.Join(s.ext, "fixture.mjs"))
		sp.Timeout = bound
		return sp
	}
	flood, spam, fork, tty := fixture("flood"), fixture("spam"), fixture("fork"), fixture("tty")
	stubborn := fixture("stubborn")
	stubborn.Env = map[string]string{"FIXTURE_IGNORE_TERM": "1"}
	every := s.spec("everything", s.script("server-everything"))
	s.m.Sync([]extmcp.Spec{flood, spam, fork, tty, stubborn, every})
	if _, failed := s.m.Tools(context.Background()); len(failed) > 0 {
		t.Fatal(failed[0].Err)
	}

	// One message that never ends: refused at the SDK's frame bound,
	// the server killed, the call an error in words.
	start := time.Now()
	_, _, err := call(t, s.m, flood, "flood", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "extension realmcp's MCP server flood") {
		t.Errorf("flood: %v", err)
	}
	if d := time.Since(start); d > bound+10*time.Second {
		t.Errorf("flood came back after %s", d)
	}
	t.Logf("flood, after %s: %v", time.Since(start), err)
	if err == nil || !strings.Contains(err.Error(), "over 16 MiB on its stdout") {
		t.Errorf("flood: %v does not say what it did", err)
	}
	// The server is started again at the next call.
	if text, _, err := call(t, s.m, flood, "ok", map[string]any{}); err != nil || text != "ok" {
		t.Errorf("ok after the flood: %q %v", text, err)
	}

	// A storm of notifications before the answer: the answer still comes.
	start = time.Now()
	if text, isErr, err := call(t, s.m, spam, "spam", map[string]any{"count": 20000}); err != nil || isErr || text != "spammed" {
		t.Errorf("spam: %q %v %v", text, isErr, err)
	}
	t.Logf("20,000 notifications and the answer in %s", time.Since(start))

	// A terminal: the server has none to open.
	if text, isErr, err := call(t, s.m, tty, "tty", map[string]any{}); err != nil || !isErr || !strings.Contains(text, "/dev/tty") {
		t.Errorf("tty: %q %v %v", text, isErr, err)
	}

	// A process in a session of its own, ignoring SIGTERM, and a server
	// that ignores SIGTERM itself.
	marker := filepath.Join(s.ext, "forked-"+filepath.Base(s.ws))
	if text, isErr, err := call(t, s.m, fork, "fork", map[string]any{"marker": marker}); err != nil || isErr || !strings.HasPrefix(text, "forked") {
		t.Fatalf("fork: %q %v %v", text, isErr, err)
	}
	if text, _, err := call(t, s.m, stubborn, "ok", map[string]any{}); err != nil || text != "ok" {
		t.Fatalf("stubborn: %q %v", text, err)
	}
	// The server answers as soon as it asked for the process.
	waitFor(t, func() bool { return len(running(t, marker)) > 0 })

	if text, isErr, err := call(t, s.m, every, "echo", map[string]any{"message": "still here"}); err != nil || isErr || !strings.Contains(text, "still here") {
		t.Errorf("echo beside the hostile servers: %q %v %v", text, isErr, err)
	}

	// The client goes: nothing of any server is left.
	s.m.Close()
	closed := time.Now()
	if !gemkittest.Poll(30*time.Second, 50*time.Millisecond, func() bool { return len(s.servers(t)) == 0 }) {
		t.Fatalf("30 s after the client went, still running: %v", describe(s.servers(t)))
	}
	t.Logf("every server gone %s after the client went", time.Since(closed))
}

// describe is each pid's command line, for a failure's words.
func describe(pids []string) []string {
	var out []string
	for _, p := range pids {
		b, _ := os.ReadFile(filepath.Join("/proc", p, "cmdline"))
		out = append(out, p+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return out
}

// TestGarbledDuringCall: a server that prints something other than MCP's
// JSON-RPC on its stdout during a call (a stray log line, half a message)
// is told as that, as it is at its start, not as a server that "exited
// during the call": the SDK ends the connection on such a line, and the
// server, its stdin closed, exits only because of it (tried in the tour
// with a Node server printing "}{").
func TestGarbledDuringCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts sandboxed servers: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	cases := []struct{ server, line string }{
		{"braces", "}{"},
		{"log", "listening on stdio"},
		{"half", `{"jsonrpc":"2.0","id":`},
	}
	var specs []extmcp.Spec
	for _, c := range cases {
		sp := s.spec(c.server, filepath.Join(s.ext, "fixture.mjs"))
		sp.Timeout = time.Minute
		specs = append(specs, sp)
	}
	s.m.Sync(specs)
	for i, c := range cases {
		_, _, err := call(t, s.m, specs[i], "garble", map[string]any{"line": c.line})
		if err == nil || !strings.Contains(err.Error(), "extension realmcp's MCP server "+c.server+" printed something other than MCP's JSON-RPC on its stdout during the call of garble") ||
			strings.Contains(err.Error(), "exited") {
			t.Errorf("%s: %v", c.server, err)
		}
		t.Logf("%s: %v", c.server, err)
		// Started again at the next call.
		if text, _, err := call(t, s.m, specs[i], "ok", map[string]any{}); err != nil || text != "ok" {
			t.Errorf("%s: ok after the garble: %q %v", c.server, text, err)
		}
	}
}
