package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestAcpxSessions keeps a conversation with gemkit acp through the real
// acpx 0.19.1, which starts the agent afresh for each command but the
// prompts (those run in its queue owner, which ends when idle for the
// --ttl given): a session created, its model set through config options
// (acpx set model), a prompt; once acpx's owner and the agent are gone,
// the session listed from the agent (session/list) and prompted again,
// which acpx does through session/resume: the model gets the whole
// conversation, from the model chosen. Then the session is closed.
// Every message gemkit wrote to acpx is checked against the ACP v1
// schema.
func TestAcpxSessions(t *testing.T) {
	_, interop := gemkittest.Interop(t, "acpx/package.json")
	acpx := filepath.Join(interop, "node_modules", ".bin", "acpx")
	f := newFixture(t, fakemodel.Text("FIRST_ANSWER"), fakemodel.Text("SECOND_ANSWER"))
	// acpx starts this wrapper as its agent: gemkit acp, with what acpx
	// writes to it and what it writes back kept, one pair of files a
	// process, for the schema check at the end.
	logs := filepath.Join(f.root, "acp-logs")
	os.MkdirAll(logs, 0o755)
	wrapper := filepath.Join(f.root, "gemkit-acp-logged")
	gemkittest.WriteFile(t, wrapper, "#!/bin/sh\nd='"+logs+"'/$$\ntee \"$d.in\" | '"+f.bin+"' acp | tee \"$d.out\"\n")
	os.Chmod(wrapper, 0o755)
	agentCmd := wrapper
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, acpx, append([]string{"--agent", agentCmd, "--ttl", "1"}, args...)...)
		cmd.Env, cmd.Dir = f.env(), f.ws
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("acpx %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("sessions", "new")
	id := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if !strings.HasPrefix(id, "gemkit-") {
		t.Fatalf("sessions new: %s", out)
	}
	if out := run("set", "model", "gemini-2.5-pro"); !strings.Contains(out, "gemini-2.5-pro") {
		t.Errorf("set model: %s", out)
	}
	if out := run("prompt", "Remember the word lighthouse"); !strings.Contains(out, "FIRST_ANSWER") {
		t.Errorf("first prompt: %s", out)
	}
	// acpx's queue owner, and the agent with it, ends once idle for the
	// ttl; acpx status shows no pid then.
	gone := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if st := run("status"); strings.Contains(st, "pid: -") {
			gone = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !gone {
		t.Fatal("acpx's queue owner did not end")
	}
	if out := run("sessions", "list"); !strings.Contains(out, id) || !strings.Contains(out, "Remember the word lighthouse") || !strings.Contains(out, f.ws) {
		t.Errorf("sessions list (the agent's): %s", out)
	}
	if out := run("prompt", "Which word?"); !strings.Contains(out, "SECOND_ANSWER") {
		t.Errorf("second prompt: %s", out)
	}
	turns := f.model.Turns()
	if len(turns) != 2 || turns[0].Model != "gemini-2.5-pro" || turns[1].Model != "gemini-2.5-pro" {
		t.Fatalf("%d turns %+v", len(turns), turns)
	}
	if g, _ := turns[1].Generate(); !strings.Contains(g.Text(), "lighthouse") || !strings.Contains(g.Text(), "FIRST_ANSWER") {
		t.Errorf("the second turn lacks the first: %s", g.Text())
	}
	run("sessions", "close")
	checkSchema(t, logs)
	if _, err := os.Stat(filepath.Join(f.home, ".local", "share", "gemkit", "acp-sessions", id+".jsonl")); err != nil {
		t.Errorf("a closed session stays stored: %v", err)
	}
}

// checkSchema checks every message the agents logged in dir wrote
// against the ACP v1 schema (interop/acp-validate.mjs).
func checkSchema(t *testing.T, dir string) {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@agentclientprotocol/sdk", "ajv")
	out, err := exec.Command(node, filepath.Join(interop, "acp-validate.mjs"), dir).Output()
	if err != nil {
		t.Fatalf("acp-validate: %v", err)
	}
	var r struct {
		Checked, Files int
		Invalid        []struct{ File, Problem, Line string }
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("acp-validate: %v\n%s", err, out)
	}
	t.Logf("%d messages of %d agent processes checked against the ACP v1 schema", r.Checked, r.Files)
	if r.Checked == 0 || len(r.Invalid) != 0 {
		t.Errorf("%d messages checked; refused by the ACP v1 schema: %+v", r.Checked, r.Invalid)
	}
}
