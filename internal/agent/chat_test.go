package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// pane is gemkit chat running in a tmux pane of a private tmux server.
type pane struct {
	t      *testing.T
	tmux   string
	socket string
}

func (p *pane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command(p.tmux, append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (p *pane) screen() string { return p.run("capture-pane", "-p", "-J", "-S", "-200", "-t", "chat") }

// waitFor waits until the pane shows s, count times in all.
func (p *pane) waitFor(s string, count int) {
	p.t.Helper()
	// The tmux pane's screen changes with no event to wait on.
	if !gemkittest.Poll(60*time.Second, 100*time.Millisecond, func() bool { return strings.Count(p.screen(), s) >= count }) {
		p.t.Fatalf("the pane never showed %q (%d times):\n%s", s, count, p.screen())
	}
}

// startChat starts gemkit chat with args in the workspace, in a pane of
// a private tmux server, with the fixture's environment and extra. The
// script stands for the person's shell, which outlives a Ctrl-C sent to
// the job in the foreground.
func startChat(t *testing.T, f *fixture, tmux string, extra []string, args string) *pane {
	t.Helper()
	p := &pane{t: t, tmux: tmux, socket: filepath.Join(f.root, "tmux.sock")}
	script := filepath.Join(f.root, "chat.sh")
	var b strings.Builder
	b.WriteString("#!/bin/sh\ntrap 'true' INT\ncd '" + f.ws + "'\n")
	for _, kv := range append(f.env(), extra...) {
		k, v, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(k, " '") || strings.Contains(v, "'") {
			continue
		}
		b.WriteString("export " + k + "='" + v + "'\n")
	}
	b.WriteString("'" + f.bin + "' chat " + args + "\necho \"chat ended with $?\"\nsleep 600\n")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	p.run("new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", script)
	t.Cleanup(func() { exec.Command(tmux, "-S", p.socket, "kill-server").Run() })
	return p
}

// typeLine types text, then Enter as its own key (else it reads as a paste).
func (p *pane) typeLine(text string) {
	p.run("send-keys", "-t", "chat", "-l", text)
	p.run("send-keys", "-t", "chat", "Enter")
}

// TestChatInTmux drives `gemkit chat` in a terminal: a tool of an
// extension without recorded consent asks first, with its permissions,
// then runs and shows one line with its outcome; a proposed edit is shown
// as a diff, accepted with one key (a, as in ide serve) and written;
// Ctrl-C stops a streaming turn and the chat goes on; the Up arrow
// recalls the last line (x/term's line editor, no "^[[A"); Ctrl-D ends it.
func TestChatInTmux(t *testing.T) {
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	f := newFixture(t)
	// Changing the manifest's permissions after linking voids the consent.
	src := filepath.Join(f.root, "src", "demo")
	manifest := strings.Replace(demoManifest, `"read": "workspace"`, `"read": "home"`, 1)
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startOpenAI(t,
		fakemodel.Call("demo_count", map[string]any{"word": "tmux", "times": 1}),
		fakemodel.Text("Counted once."),
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "search": "beta", "replace": "delta"}),
		fakemodel.Text("Edited a.txt."))

	p := startChat(t, f, tmux, nil, "--no-ide --base-url "+srv.URL+"/v1 -m local")
	p.waitFor("Ctrl-D ends", 1)
	p.typeLine("count tmux")
	p.waitFor("wants to run a tool", 1)
	p.waitFor("[y/N]", 1)
	// Each permission on a line of its own, from the first column: the
	// question is the line editor's prompt, whose lines before the last
	// once came out as a staircase (a newline without a carriage return).
	if s := p.screen(); !strings.Contains(s, "\nIts tools may:\n  - read files in your home directory\n") {
		t.Errorf("the permissions are not shown one a line:\n%s", s)
	}
	p.typeLine("y")
	p.waitFor("Counted once.", 1)
	if s := p.screen(); !strings.Contains(s, "⚙ demo_count → ok") {
		t.Errorf("no line for the tool call:\n%s", s)
	}
	p.typeLine("now edit a.txt")
	p.waitFor("Apply this change to a.txt: accept [a], reject [r], or edit [e]?", 1)
	if s := p.screen(); !strings.Contains(s, "-beta") || !strings.Contains(s, "+delta") {
		t.Errorf("no diff shown:\n%s", s)
	}
	p.run("send-keys", "-t", "chat", "a")
	p.waitFor("Edited a.txt.", 1)
	if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "alpha\ndelta\n" {
		t.Errorf("a.txt is %q", got)
	}
	if s := p.screen(); !strings.Contains(s, "a.txt: accepted in the terminal, written") {
		t.Errorf("no edit outcome line:\n%s", s)
	}
	reqs := srv.Requests()
	c, _ := reqs[len(reqs)-1].Chat()
	if res := c.ToolResults(); len(res) != 2 || !strings.Contains(res[1], "accepted") {
		t.Errorf("tool results %q", res)
	}

	// Ctrl-C stops a turn that is streaming; the chat goes on.
	srv.AddStall(fakemodel.Text("a reply that never ends"))
	srv.Add(fakemodel.Text("Still here."))
	p.typeLine("talk")
	<-srv.Stalled()
	p.run("send-keys", "-t", "chat", "C-c")
	p.waitFor("(turn stopped)", 1)
	p.typeLine("hello again")
	p.waitFor("Still here.", 1)
	p.run("send-keys", "-t", "chat", "Up")
	p.waitFor("> hello again", 2)
	if s := p.screen(); strings.Contains(s, "^[[A") {
		t.Errorf("the Up arrow was echoed raw:\n%s", s)
	}
	p.run("send-keys", "-t", "chat", "C-u")
	p.run("send-keys", "-t", "chat", "C-d")
	p.waitFor("chat ended with 0", 1)
}

// TestChatAfterStoppedReview stops a turn with Ctrl-C while an edit waits
// for its key, then types the next prompt: the prompt reaches the model
// whole, and none of its letters answers the next edit's question (an
// "a" in it once accepted that edit unseen, and an "e" opened $EDITOR).
func TestChatAfterStoppedReview(t *testing.T) {
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	for _, typed := range []string{"next", "add a test"} {
		t.Run(typed, func(t *testing.T) {
			f := newFixture(t)
			edit := fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "search": "beta", "replace": "delta"})
			srv := startOpenAI(t, edit, fakemodel.Text("Noted."), edit, fakemodel.Text("Done."))
			p := startChat(t, f, tmux, nil, "--no-ide --base-url "+srv.URL+"/v1 -m local")
			p.waitFor("Ctrl-D ends", 1)
			question := "Apply this change to a.txt: accept [a], reject [r], or edit [e]?"
			p.typeLine("edit a.txt")
			p.waitFor(question, 1)
			p.run("send-keys", "-t", "chat", "C-c")
			p.waitFor("(turn stopped)", 1)
			p.typeLine(typed)
			p.waitFor("Noted.", 1)
			reqs := srv.Requests()
			c, _ := reqs[len(reqs)-1].Chat()
			if last := c.Messages[len(c.Messages)-1]; last["content"] != typed {
				t.Errorf("the model was sent %q, not %q", last["content"], typed)
			}

			p.typeLine("edit it again")
			p.waitFor(question, 2)
			p.run("send-keys", "-t", "chat", "r")
			p.waitFor("Done.", 1)
			if s := p.screen(); !strings.Contains(s, "a.txt: rejected in the terminal") {
				t.Errorf("the second edit was not left to the key pressed for it:\n%s", s)
			}
			if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "alpha\nbeta\n" {
				t.Errorf("a.txt is %q", got)
			}
		})
	}
}
