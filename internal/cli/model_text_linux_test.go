package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// evilReply is a model repeating what a tool printed: OSC 52 (set the
// clipboard), OSC 0 (the window title), a cursor move up and an erased
// line followed by a fake gemkit line, a carriage return over it, and a
// bidirectional override; and what a terminal needs: lines, a tab,
// **bold** (chat's own styling), a multi-byte character.
const evilReply = "Here:\n\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07\x1b]0;title\x07\x1b[1A\x1b[2Kgemkit: ok\rfake\u202egnp.exe\n\tindented **bold** é\r\nlast"

// TestModelTextOnTerminalEscaped: the model's text reaches a terminal with
// its control characters escaped, as a tool's output does, in `gemkit
// run` and `gemkit chat`: no sequence of the model's reaches the
// terminal, newlines and tabs stay, and chat still shows **bold** bold.
// To a pipe `gemkit run` writes the text as it came. Before, the model's
// sequences went to the terminal raw.
func TestModelTextOnTerminalEscaped(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	root := t.TempDir()
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "home", "ws")
	os.MkdirAll(ws, 0o755)
	srv, err := fakemodel.Start(fakemodel.Text(evilReply), fakemodel.Text(evilReply), fakemodel.Text(evilReply))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := append(gemkittest.AgentEnv(home, root), "GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+srv.URL, "TERM=xterm-256color")
	escaped := []string{`\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07`, `\x1b]0;title\x07`, `\x1b[1A\x1b[2Kgemkit: ok\x0dfake\u202egnp.exe`}
	check := func(how, got string, bold bool) {
		t.Helper()
		for _, e := range escaped {
			if !strings.Contains(got, e) {
				t.Errorf("%s: %q is not shown escaped in %q", how, e, got)
			}
		}
		rest := strings.NewReplacer("\x1b[1m", "", "\x1b[22m", "").Replace(got)
		if strings.ContainsAny(rest, "\x1b\x07\u202e") {
			t.Errorf("%s: a control character of the model's reached the terminal: %q", how, got)
		}
		// The terminal's own line discipline turns "\n" into "\r\n".
		if !strings.Contains(got, "Here:\r\n") || !strings.Contains(got, "\tindented ") || !strings.Contains(got, "é\r\nlast") {
			t.Errorf("%s: lines, tabs or characters were lost: %q", how, got)
		}
		if bold != strings.Contains(got, "\x1b[1mbold\x1b[22m") {
			t.Errorf("%s: bold styling %v, want %v: %q", how, !bold, bold, got)
		}
	}

	// gemkit run, its standard output a terminal.
	m, s := openPTY(t)
	cmd := exec.Command(bin, "run", "--no-ide", "say it")
	cmd.Dir, cmd.Env = ws, env
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = s, &errb
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&out, m); close(done) }()
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	s.Close()
	<-done
	check("gemkit run", out.String(), false)

	// gemkit run to a pipe: the text as the model wrote it.
	cmd = exec.Command(bin, "run", "--no-ide", "say it")
	cmd.Dir, cmd.Env = ws, env
	piped, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(piped), evilReply) {
		t.Errorf("gemkit run to a pipe changed the text: %q", piped)
	}

	// gemkit chat on a terminal: the same, with **bold** shown bold.
	m, s = openPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, bin, "chat", "--no-ide")
	cmd.Dir, cmd.Env = ws, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	out.Reset()
	var got gemkittest.Output
	done = make(chan struct{})
	go func() { io.Copy(&got, m); close(done) }()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got.WaitFor(t, "the prompt", func(o string) bool { return strings.Contains(o, "> ") })
	m.Write([]byte("say it\r"))
	// Ctrl-D at the next prompt, as a person ends the chat (a Ctrl-D sent
	// while the turn still ran, on a loaded machine, never reached it).
	text := got.WaitFor(t, "the reply and the next prompt", func(o string) bool {
		i := strings.Index(o, "last")
		return i >= 0 && strings.Contains(o[i:], "> ")
	})
	m.Write([]byte{4})
	if err := cmd.Wait(); err != nil {
		t.Errorf("chat: %v\n%q", err, got.String())
	}
	s.Close()
	<-done
	reply := text[strings.Index(text, "Here:"):]
	check("gemkit chat", reply, true)
}

// TestModelTextPieces: the text arrives in pieces that may split a
// character or a "\r\n": what a piece ends in is held back for the next
// one, never shown as escaped bytes, and a lone "\r" is escaped.
func TestModelTextPieces(t *testing.T) {
	for _, tc := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"caf\xc3", "\xa9 ok"}, "café ok"},
		{[]string{"\xf0\x9f", "\x98", "\x80!"}, "😀!"},
		{[]string{"a\r", "\nb"}, "a\nb"},
		{[]string{"a\r", "b"}, `a\x0db`},
		{[]string{"x\x1b", "[2K"}, `x\x1b[2K`},
		{[]string{"end\xe2\x82"}, `end\xe2\x82`},
	} {
		var m modelText
		var b strings.Builder
		for _, p := range tc.pieces {
			b.WriteString(m.escape(p))
		}
		b.WriteString(m.flush())
		if b.String() != tc.want {
			t.Errorf("%q: %q, want %q", tc.pieces, b.String(), tc.want)
		}
	}
}
