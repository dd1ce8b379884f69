package acp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// acpxRun is the line docs/acp.md gives for trying gemkit acp from a
// terminal, with the prompt to send.
func acpxRun(acpx, prompt string) string {
	return "'" + acpx + "' --agent 'gemkit acp' exec '" + prompt + "'"
}

// TestAcpx drives `gemkit acp` with the real acpx 0.19.1, a command-line
// ACP client, as docs/acp.md says to try it: in tmux, a proposed new file
// is a permission question acpx asks on the terminal; answered y (and y
// again to acpx's own question before it writes), the file is written
// byte for byte and acpx exits 0; answered n, nothing is written and
// acpx exits 5. Without a key, acpx prints gemkit's words on what to set.
func TestAcpx(t *testing.T) {
	t.Parallel()
	_, interop := gemkittest.Interop(t, "acpx/package.json")
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	acpx := filepath.Join(interop, "node_modules", ".bin", "acpx")
	f := newFixture(t,
		fakemodel.Reply{Text: "I will write it.", Calls: []fakemodel.FunctionCall{{Name: "propose_edit", Args: map[string]any{"path": "new.txt", "content": "fresh\n"}}}},
		fakemodel.Text("WRITTEN_DONE"),
		fakemodel.Reply{Calls: []fakemodel.FunctionCall{{Name: "propose_edit", Args: map[string]any{"path": "keep.txt", "content": "must not land\n"}}}},
		fakemodel.Text("REJECTED_DONE"))
	bin := filepath.Join(f.root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.bin, filepath.Join(bin, "gemkit")); err != nil {
		t.Fatal(err)
	}
	env := append(f.env(), "PATH="+bin+":"+os.Getenv("PATH"))
	var script strings.Builder
	script.WriteString("cd '" + f.ws + "'\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		script.WriteString("export " + k + "='" + v + "'\n")
	}
	script.WriteString(acpxRun(acpx, "write new.txt") + "; echo \"FIRST_EXIT $?\"\n")
	script.WriteString(acpxRun(acpx, "write keep.txt") + "; echo \"SECOND_EXIT $?\"\nsleep 600\n")
	gemkittest.WriteFile(t, filepath.Join(f.root, "acpx.sh"), script.String())
	sock := filepath.Join(f.root, "tmux.sock")
	run := func(args ...string) string {
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("new-session", "-d", "-s", "a", "-x", "200", "-y", "60", "sh", filepath.Join(f.root, "acpx.sh"))
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	screen := func() string { return run("capture-pane", "-p", "-J", "-S", "-300", "-t", "a") }
	wait := func(what string, cond func(string) bool) {
		t.Helper()
		// The real acpx's screen in tmux changes with no event to wait on.
		var s string
		if !gemkittest.Poll(2*time.Minute, 200*time.Millisecond, func() bool { s = screen(); return cond(s) }) {
			t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
	}
	answer := func(question string, n int, key string) {
		t.Helper()
		wait(question, func(s string) bool { return strings.Count(s, question) >= n })
		run("send-keys", "-t", "a", "-l", key)
		run("send-keys", "-t", "a", "Enter")
	}

	answer("[permission] Allow Create new.txt [edit]? (y/N)", 1, "y")
	answer("Allow write? (y/N)", 1, "y")
	wait("the first run to end", func(s string) bool { return strings.Contains(s, "FIRST_EXIT") })
	if s := screen(); !strings.Contains(s, "WRITTEN_DONE") || !strings.Contains(s, "FIRST_EXIT 0") || !strings.Contains(s, "[done] end_turn") {
		t.Errorf("accepted run:\n%s", s)
	}
	if got, err := os.ReadFile(filepath.Join(f.ws, "new.txt")); err != nil || string(got) != "fresh\n" {
		t.Errorf("new.txt: %q %v", got, err)
	}

	answer("[permission] Allow Create keep.txt [edit]? (y/N)", 1, "n")
	wait("the second run to end", func(s string) bool { return strings.Contains(s, "SECOND_EXIT") })
	if s := screen(); !strings.Contains(s, "SECOND_EXIT 5") || !strings.Contains(s, "The person rejected the edit of keep.txt") {
		t.Errorf("rejected run:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "keep.txt")); err == nil {
		t.Error("the rejected file was written")
	}

	// No key: acpx shows error.message, which carries what to set.
	nokey := []string{}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GEMINI_API_KEY=") {
			nokey = append(nokey, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, acpx, "--agent", "gemkit acp", "exec", "hello")
	cmd.Dir, cmd.Env = f.ws, nokey
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Authentication required: no Gemini API key: set GEMINI_API_KEY") {
		t.Errorf("acpx without a key: %v\n%s", err, out)
	}
}
