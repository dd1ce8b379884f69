package term

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/term"
)

// Lines reads what the person types in a conversation (gemkit chat, and
// the questions gemkit run asks): lines, edited with the arrow keys and
// recalled from history (x/term's Terminal) when In and Out are
// terminals, else read as they come; and single keys for choices, which
// need no Enter on a terminal. One goroutine reads, and only when asked,
// so that nothing reads the terminal while an editor owns it; a read that
// its caller gave up on (a cancelled context) is handed to the next one,
// so no typed line is lost. On a terminal, lines and keys are read from
// one buffer, and a question asked by key takes only a key pressed after
// it is shown: what was typed before it (the rest of a prompt, a key
// meant for a question a Ctrl-C took away) never answers it.
type Lines struct {
	out  io.Writer
	in   io.Reader
	br   *bufio.Reader
	term *term.Terminal
	// ahead holds a key read for a question its caller gave up on, given
	// to the line read that came next, as the start of its line.
	ahead []byte
	// keyMode enters the terminal mode in which keys arrive at once,
	// Ctrl-C still a signal; it returns how to leave it.
	keyMode func() (func(), bool)

	reqs    chan linesRequest
	results chan linesResult
	// waiting is set while a request is out whose result nobody took
	// yet (the caller's context ended first).
	waiting bool
	// pendingKey says the request out is for a key.
	pendingKey bool
}

type linesRequest struct {
	prompt string
	key    bool
}

type linesResult struct {
	text string
	err  error
}

// NewLines reads from in, writing prompts and echo to out.
func NewLines(in io.Reader, out io.Writer) *Lines {
	l := &Lines{in: in, out: out, br: bufio.NewReader(in), reqs: make(chan linesRequest), results: make(chan linesResult, 1)}
	if IsTerminal(in) && IsTerminal(out) {
		if restore, ok := KeyMode(in); ok {
			restore()
			l.keyMode = func() (func(), bool) { return KeyMode(in) }
			l.term = term.NewTerminal(struct {
				io.Reader
				io.Writer
			}{lineSource{l}, out}, "")
		}
	}
	go l.serve()
	return l
}

// IsTerminal reports whether v, a stream, is a terminal: one a person
// answers on, or one whose escape sequences act. Every caller asks it
// here, of any value with a file descriptor.
func IsTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// serve reads one line or key per request, forever: the reader outlives
// its users, as a blocked read of standard input cannot be interrupted.
func (l *Lines) serve() {
	for req := range l.reqs {
		var r linesResult
		switch {
		case l.term != nil:
			r = l.readTerminal(req)
		case req.key:
			fmt.Fprint(l.out, req.prompt)
			r.text, r.err = l.br.ReadString('\n')
			r.text = strings.TrimSpace(r.text)
		default:
			fmt.Fprint(l.out, req.prompt)
			r.text, r.err = l.br.ReadString('\n')
			r.text = strings.TrimRight(r.text, "\r\n")
		}
		if r.err != nil && r.text != "" {
			r.err = nil
		}
		l.results <- r
	}
}

// readTerminal reads in key mode, which is left again before the result
// goes out, so that the model's reply and $EDITOR see the terminal as
// it was.
func (l *Lines) readTerminal(req linesRequest) linesResult {
	restore, ok := l.keyMode()
	if !ok {
		restore = func() {}
	}
	defer restore()
	if !req.key {
		l.term.SetPrompt(req.prompt)
		text, err := l.term.ReadLine()
		if errors.Is(err, term.ErrPasteIndicator) {
			err = nil
		}
		return linesResult{text, err}
	}
	l.ahead = nil
	l.br.Discard(l.br.Buffered())
	discardTypeAhead(l.in)
	fmt.Fprint(l.out, req.prompt)
	for {
		r, _, err := l.br.ReadRune()
		if err != nil {
			return linesResult{err: err}
		}
		switch r {
		case '\n', '\r', ' ', '\t':
			continue
		case 0x04: // Ctrl-D
			fmt.Fprintln(l.out)
			return linesResult{err: io.EOF}
		}
		return linesResult{text: string(r)}
	}
}

// ReadLine shows prompt and returns the next line, io.EOF at the end of
// input (Ctrl-D on an empty line), or ctx's error.
//
// On a terminal the line editor draws only the prompt's last line: it
// draws a prompt again and again as the line is edited, in the terminal
// mode where a newline does not return the carriage, so the lines before
// it (a consent question's permissions) are written once, each ended
// with a carriage return, instead of as a staircase.
func (l *Lines) ReadLine(ctx context.Context, prompt string) (string, error) {
	if i := strings.LastIndexByte(prompt, '\n'); i >= 0 && l.term != nil {
		head := strings.ReplaceAll(strings.ReplaceAll(prompt[:i+1], "\r\n", "\n"), "\n", "\r\n")
		if _, err := io.WriteString(l.out, head); err != nil {
			return "", err
		}
		prompt = prompt[i+1:]
	}
	return l.read(ctx, linesRequest{prompt: prompt})
}

// ReadKey shows prompt and returns the next key (on a terminal, as soon
// as it is pressed; elsewhere the next line, trimmed), io.EOF at the end
// of input, or ctx's error.
func (l *Lines) ReadKey(ctx context.Context, prompt string) (string, error) {
	key, err := l.read(ctx, linesRequest{prompt: prompt, key: true})
	if l.term != nil && (err == nil || ctx.Err() != nil) {
		// The key, or the end of a question given up on.
		fmt.Fprintf(l.out, "%s\n", key)
	}
	return key, err
}

func (l *Lines) read(ctx context.Context, req linesRequest) (string, error) {
	if l.waiting && l.pendingKey != req.key && l.term != nil {
		// A question by key was given up on, and now a line is asked for
		// (or the other way round): the answer that comes is not this
		// read's. A key starts the line, whose prompt shows while the key
		// is awaited (the line editor draws it again over this one); a
		// line is dropped.
		if !req.key {
			fmt.Fprint(l.out, req.prompt)
		}
		text, err := l.take(ctx)
		if err != nil {
			return "", err
		}
		if !req.key {
			fmt.Fprint(l.out, "\r")
			l.ahead = []byte(text)
		}
	}
	if !l.waiting {
		select {
		case l.reqs <- req:
			l.waiting, l.pendingKey = true, req.key
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return l.take(ctx)
}

// take waits for the result of the request out.
func (l *Lines) take(ctx context.Context) (string, error) {
	select {
	case r := <-l.results:
		l.waiting = false
		return r.text, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// lineSource is what the line editor reads: a key kept for it, then the
// buffer key questions read too, so that neither loses what the other
// read ahead.
type lineSource struct{ l *Lines }

func (s lineSource) Read(p []byte) (int, error) {
	if len(s.l.ahead) > 0 {
		n := copy(p, s.l.ahead)
		s.l.ahead = s.l.ahead[n:]
		return n, nil
	}
	return s.l.br.Read(p)
}
