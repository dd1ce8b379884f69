package acp_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestStdinClosed: a client that goes away mid-tool leaves nothing
// running: gemkit exits and the tool's process is killed.
func TestStdinClosed(t *testing.T) {
	f := newFixture(t, fakemodel.Call("demo_slow", map[string]any{}), fakemodel.Text("never"))
	a := startRaw(t, f)
	id := a.open(f)
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"wait"}]}}`)
	// The tool runs in its own pid namespace and temporary folder: its
	// sleep is found by command line.
	waitSleepers(t, true, 30*time.Second)
	a.in.Close()
	select {
	case err := <-a.done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("gemkit acp still runs 30 s after its stdin closed")
	}
	waitSleepers(t, false, 30*time.Second)
}

// waitSleepers waits until the slow tool's processes run (running true)
// or are all gone.
func waitSleepers(t *testing.T, running bool, within time.Duration) {
	t.Helper()
	// The sandboxed tool's processes are found only by reading /proc.
	if !gemkittest.Poll(within, 20*time.Millisecond, func() bool { return (len(sleepers()) > 0) == running }) {
		t.Fatalf("after %v the slow tool's processes are %v, want running: %v", within, sleepers(), running)
	}
}

// sleepers are the processes of the demo's slow tool.
func sleepers() []string {
	var out []string
	m, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range m {
		data, _ := os.ReadFile(p)
		if strings.Contains(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})), "sleep "+slowSeconds) {
			out = append(out, p)
		}
	}
	return out
}

// TestCancelKillsTool: session/cancel during a sandboxed tool kills it
// at once and the prompt answers cancelled; the session goes on.
func TestCancelKillsTool(t *testing.T) {
	f := newFixture(t, fakemodel.Call("demo_slow", map[string]any{}), fakemodel.Text("never"), fakemodel.Text("Still here."))
	a := startRaw(t, f)
	id := a.open(f)
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"wait"}]}}`)
	waitSleepers(t, true, 30*time.Second)
	start := time.Now()
	a.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + id + `"}}`)
	if m := a.answer(3, nil); m.Error != nil || !strings.Contains(string(m.Result), `"cancelled"`) {
		t.Errorf("prompt after cancel: %+v %s", m.Error, m.Result)
	}
	// At once, not when the tool would end (in 6047 s): 15 s is a
	// loaded machine's bound.
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("cancel answered after %v", d)
	}
	waitSleepers(t, false, 30*time.Second)
	a.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"again"}]}}`)
	if m := a.answer(4, nil); m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Errorf("the next prompt: %+v %s", m.Error, m.Result)
	}
}
