package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/model"
)

// turnText writes the model's text, starting a new line where a model
// turn follows another's text that did not end one (a tool call or a
// retry came between them), so that successive turns are not run
// together on one line. On a terminal (escape) the text is shown with its
// control characters escaped (modelText), as a tool's output is.
type turnText struct {
	w       io.Writer
	escape  bool
	esc     modelText
	mu      sync.Mutex
	open    bool // the last text written did not end its line
	newTurn bool
}

func (t *turnText) write(s string) {
	if s == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.escape {
		if s = t.esc.escape(s); s == "" {
			return
		}
	}
	if t.newTurn && t.open {
		io.WriteString(t.w, "\n")
	}
	t.newTurn = false
	io.WriteString(t.w, s)
	t.open = !strings.HasSuffix(s, "\n")
}

// modelText escapes a model's streamed text for a terminal: a model that
// repeats what a tool printed (or what a web page said) must not reach
// the terminal's commands: set the clipboard (OSC 52), change the title,
// move the cursor or erase lines to fake what the person sees. Newlines
// and tabs stay (and "\r\n" is a newline); every other control
// character, bidirectional override and invalid byte is shown escaped
// (extension.PrintableText). A piece may end inside a character or
// between "\r" and "\n": that end is held back for the next piece.
type modelText struct{ held string }

func (m *modelText) escape(s string) string {
	s = m.held + s
	m.held = ""
	// Hold back an incomplete UTF-8 sequence at the end (at most three
	// bytes), and a carriage return that may start "\r\n".
	cut := len(s)
	for i := len(s) - 1; i >= 0 && i >= len(s)-3; i-- {
		if c := s[i]; c&0xc0 != 0x80 {
			if c >= 0xc0 && !utf8.FullRuneInString(s[i:]) {
				cut = i
			}
			break
		}
	}
	if cut == len(s) && strings.HasSuffix(s, "\r") {
		cut--
	}
	s, m.held = s[:cut], s[cut:]
	return extension.PrintableText(strings.ReplaceAll(s, "\r\n", "\n"))
}

// flush escapes what was held back, at the end of a reply.
func (m *modelText) flush() string {
	s := m.held
	m.held = ""
	return extension.PrintableText(s)
}

// turn marks the end of a model turn's text.
func (t *turnText) turn() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newTurn = true
}

// end ends the line the text left open, once the person's prompt is done.
func (t *turnText) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rest := t.esc.flush(); rest != "" {
		io.WriteString(t.w, rest)
		t.open = true
	}
	if t.open {
		io.WriteString(t.w, "\n")
	}
	t.open, t.newTurn = false, false
}

// printEvent shows what the agent did on w, a line each, once t has
// ended the model's turn: a tool call, its outcome, an edit's outcome, a
// notice. Every word a model or an extension chose is made printable.
func printEvent(w io.Writer, t *turnText, e agent.Event) {
	t.turn()
	switch e.Type {
	case agent.EventToolCall:
		fmt.Fprintf(w, "\n  ⚙ %s %s\n", extension.Printable(e.Name), argsLine(e.Args))
	case agent.EventToolResult:
		fmt.Fprintln(w, toolLine(e))
	case agent.EventEditOutcome:
		fmt.Fprintf(w, "  ✎ %s: %s\n", extension.Printable(e.Name), extension.Printable(e.Text))
	case agent.EventNotice:
		fmt.Fprintf(w, "gemkit: %s\n", extension.PrintableText(e.Text))
	}
}

// codeStartLine tells the person, on w, that an accepted edit's check
// waits for the first start of the file's language server (6 to 10 s
// for gopls on a loaded machine), which would otherwise be silence after
// the edit's line. On a terminal it is a status line, cleared when the
// check is over, the tool's line then taking its place, as an install's
// progress is (internal/pkgrun); elsewhere it is one line, as the other
// lines on standard error are.
func codeStartLine(w io.Writer, terminal bool) codeintel.Starting {
	return func(rel, server string) func() {
		line := fmt.Sprintf("  ✎ checking %s with %s (starting it)…", extension.Printable(rel), extension.Printable(server))
		if !terminal {
			fmt.Fprintln(w, line)
			return nil
		}
		fmt.Fprint(w, "\r\x1b[K"+line)
		return func() { fmt.Fprint(w, "\r\x1b[K") }
	}
}

// outcomeError is how a Run that did not finish ends the command, with
// the flag of the limit that stopped it.
func outcomeError(out agent.Outcome) error {
	switch out.Status {
	case agent.MaxTurns:
		return fmt.Errorf("%w (--max-turns)", out.Err)
	case agent.MaxTokens:
		return fmt.Errorf("%w (--max-output-tokens)", out.Err)
	}
	return out.Err
}

// waitLine is the one line shown on stderr before a retry's wait.
func waitLine(w model.Wait) string {
	err := w.Err
	var me *model.Error
	if errors.As(err, &me) {
		short := *me
		short.Hint = "" // what to do is to wait, which gemkit does
		err = &short
	}
	why := strings.TrimRight(oneLine(err.Error(), 240), ". ")
	if w.Discarded {
		why = "the reply above is discarded: " + why
	}
	return fmt.Sprintf("gemkit: %s; retrying in %s (attempt %d of %d; Ctrl-C stops)", why, roundWait(w.Delay), w.Attempt+1, w.MaxAttempts)
}

// roundWait shows a wait to the tenth of a second under 10 s, else to the
// second.
func roundWait(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// toolLine is the one line shown for a tool call's outcome.
func toolLine(e agent.Event) string {
	status := "ok"
	if e.IsError {
		status = "failed: " + oneLine(e.Text, 160)
	} else if e.Text != "" {
		status = "ok: " + oneLine(e.Text, 100)
	}
	name := extension.Printable(e.Name)
	if name == "" {
		name = "(unreadable block)"
	}
	return fmt.Sprintf("  ⚙ %s → %s (%s)", name, status, e.Elapsed.Round(time.Millisecond))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return extension.Printable(s)
}

func argsLine(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	return oneLine(string(args), 120)
}
