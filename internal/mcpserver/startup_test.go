package mcpserver_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/claudetest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestStdioOnTerminal checks that `gemkit mcp` started by hand on a
// terminal says in one line on stderr that it waits for a client and how
// to set one up, that Ctrl-D ends it, and that started by a client (no
// terminal) it says nothing on stderr, which a client would log.
func TestStdioOnTerminal(t *testing.T) {
	t.Parallel()
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	f := newFixture(t)
	sock := filepath.Join(f.root, "tmux.sock")
	errFile, done := filepath.Join(f.root, "stderr.txt"), filepath.Join(f.root, "done.txt")
	var b strings.Builder
	b.WriteString("#!/bin/sh\ncd '" + f.ws + "'\n")
	for _, kv := range f.env() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, " '") || strings.Contains(v, "'") {
			continue
		}
		b.WriteString("export " + k + "='" + v + "'\n")
	}
	b.WriteString("'" + f.bin + "' mcp 2>'" + errFile + "'\necho $? >'" + done + "'\nsleep 600\n")
	script := filepath.Join(f.root, "mcp.sh")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tmux, "-S", sock, "new-session", "-d", "-x", "120", "-y", "20", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	// The real gemkit process writes to the terminal on its own time, and
	// the shell in tmux writes its exit status to a file: neither has an
	// event to wait on. Both waits share 30 seconds.
	deadline := time.Now().Add(30 * time.Second)
	if !gemkittest.Poll(time.Until(deadline), 50*time.Millisecond, func() bool {
		b, _ := os.ReadFile(errFile)
		return strings.Contains(string(b), "\n")
	}) {
		t.Fatal("gemkit mcp on a terminal printed no line on stderr")
	}
	exec.Command(tmux, "-S", sock, "send-keys", "C-d").Run()
	var status []byte
	if !gemkittest.Poll(time.Until(deadline), 50*time.Millisecond, func() bool {
		status, _ = os.ReadFile(done)
		return len(status) > 0
	}) {
		t.Fatal("gemkit mcp did not end on Ctrl-D")
	}
	if strings.TrimSpace(string(status)) != "0" {
		t.Errorf("gemkit mcp ended with status %s after Ctrl-D", status)
	}
	got, _ := os.ReadFile(errFile)
	if lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "waiting for an MCP client") || !strings.Contains(lines[0], "claude mcp add -s user gemkit -- gemkit mcp") {
		t.Errorf("stderr on a terminal:\n%s", got)
	}

	cmd := exec.Command(f.bin, "mcp")
	cmd.Dir, cmd.Env = f.ws, f.env()
	cmd.Stdin = strings.NewReader("")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("gemkit mcp started by a client: %v, stderr %q", err, stderr.String())
	}
}

// TestHTTPSetupSurvivesRestart checks that what `gemkit mcp --http`
// prints to set a client up still works after a restart: the token is
// kept in a 0600 file, and the restart line it prints takes the same
// port. The set-up lines themselves are run with the real Claude Code and
// Gemini CLI, which must record the server with its URL and token.
func TestHTTPSetupSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start := func(args ...string) (lines []string, stop func()) {
		stdout, stop := runHTTP(t, f, nil, args...)
		// The address, where the token is, a claude and a gemini set-up
		// line, and with any free port the restart line.
		want := 5
		if len(args) > 0 {
			want = 4
		}
		for len(lines) < want {
			line, err := stdout.ReadString('\n')
			if err != nil {
				t.Fatalf("gemkit mcp --http printed %q then %v", lines, err)
			}
			lines = append(lines, strings.TrimSpace(line))
		}
		return lines, stop
	}
	setup := regexp.MustCompile(`^claude mcp add -t http gemkit (http://127\.0\.0\.1:\d+/mcp) -H "Authorization: Bearer ([0-9a-f]{64})"$`)
	lines, stop := start()
	m := setup.FindStringSubmatch(lines[2])
	if m == nil || !strings.Contains(lines[1], filepath.Join(".gemini", "gemkit", "mcp-token")+" (made now") {
		stop()
		t.Fatalf("set-up lines:\n%s", strings.Join(lines, "\n"))
	}
	url, token := m[1], m[2]
	restart, ok := strings.CutPrefix(lines[4], "The port was free now; start it again on the same one with: gemkit mcp --http ")
	stop()
	if !ok {
		t.Fatalf("no restart line:\n%s", strings.Join(lines, "\n"))
	}
	fi, err := os.Stat(filepath.Join(f.home, ".gemini", "gemkit", "mcp-token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi, err)
	}

	lines, stop = start(strings.Fields(restart)...)
	defer stop()
	if m := setup.FindStringSubmatch(lines[2]); m == nil || m[1] != url || m[2] != token {
		t.Errorf("after a restart the set-up line changed:\n%s", strings.Join(lines, "\n"))
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the first set-up's token after a restart: %v %v", resp, err)
	}
	resp.Body.Close()

	// The lines as a person pastes them, in homes of their own.
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	for _, c := range []struct {
		line, config string
		argv0        []string
		env          func(home string) []string
	}{
		{lines[2], filepath.Join(".claude", ".claude.json"), []string{claudetest.Binary(t)},
			func(home string) []string { return []string{"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude")} }},
		{lines[3], filepath.Join(".gemini", "settings.json"), []string{node, geminiJS(interop)},
			func(string) []string { return nil }},
	} {
		args := shellFields(c.line)
		home := t.TempDir()
		cmd := exec.Command(c.argv0[0], append(c.argv0[1:], args[1:]...)...)
		cmd.Dir = f.ws
		cmd.Env = append(f.env(), append(c.env(home), "HOME="+home)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", c.line, err, out)
			continue
		}
		b, _ := os.ReadFile(filepath.Join(home, c.config))
		if !strings.Contains(string(b), `"url": "`+url+`"`) || !strings.Contains(string(b), `"Authorization": "Bearer `+token+`"`) {
			t.Errorf("%s left %s:\n%s", args[0], c.config, b)
		}
	}
}

// shellFields splits a line as a shell does one without escapes: at
// spaces, except inside double quotes.
func shellFields(line string) []string {
	var out []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
			}
			cur.Reset()
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
