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
// so no typed line is lost.
type Lines struct {
	out  io.Writer
	in   io.Reader
	br   *bufio.Reader
	term *term.Terminal
	// keyMode enters the terminal mode in which keys arrive at once,
	// Ctrl-C still a signal; it returns how to leave it.
	keyMode func() (func(), bool)

	reqs    chan linesRequest
	results chan linesResult
	// waiting is set while a request is out whose result nobody took
	// yet (the caller's context ended first).
	waiting bool
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
			}{in, out}, "")
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
		fmt.Fprintf(l.out, "%c\n", r)
		return linesResult{text: string(r)}
	}
}

// ReadLine shows prompt and returns the next line, io.EOF at the end of
// input (Ctrl-D on an empty line), or ctx's error.
func (l *Lines) ReadLine(ctx context.Context, prompt string) (string, error) {
	return l.read(ctx, linesRequest{prompt: prompt})
}

// ReadKey shows prompt and returns the next key (on a terminal, as soon
// as it is pressed; elsewhere the next line, trimmed), io.EOF at the end
// of input, or ctx's error.
func (l *Lines) ReadKey(ctx context.Context, prompt string) (string, error) {
	return l.read(ctx, linesRequest{prompt: prompt, key: true})
}

func (l *Lines) read(ctx context.Context, req linesRequest) (string, error) {
	if !l.waiting {
		select {
		case l.reqs <- req:
			l.waiting = true
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	select {
	case r := <-l.results:
		l.waiting = false
		return r.text, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
