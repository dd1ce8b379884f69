// Package term is gemkit's terminal front-end: an editor for the IDE
// companion that lives in the terminal where `gemkit ide serve` runs. It
// shows each proposed change as a unified diff and asks the person to
// accept it, reject it or edit it in $EDITOR, one diff at a time and in the
// order they came, and prints a status line of the CLIs connected and the
// diffs waiting whenever either changes.
//
// A Frontend is a companion.Editor: the companion calls OpenDiff, CloseDiff
// and FileWritten from its own goroutines, and Run, in the goroutine that
// owns the terminal, turns the person's answers into companion.Events.
// Serve is the whole life of a companion with the terminal as its editor.
// The package's files follow its concerns: the front-end (this file and
// serve.go), the queue of diffs (queue.go), the status line (status.go),
// editing a proposal (edit.go), and what run and chat share with it
// (lines.go, bold.go, diff.go).
package term

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/extension"
)

// ErrClosed is returned by OpenDiff once Run has returned: nobody is left
// to answer the diff.
var ErrClosed = errors.New("the terminal front-end has stopped")

// Options configure a Frontend.
type Options struct {
	// In carries the person's answers, one per line. When it ends, every
	// diff still waiting is rejected and Run returns.
	In io.Reader
	// Out receives the diffs, prompts and notices.
	Out io.Writer
	// Color paints diffs with ANSI colours; see ColorEnabled.
	Color bool
	// Editor is the shell command that edits a file, which is passed as
	// its last argument; empty means EditorCommand(os.Getenv).
	Editor string
	// TempDir holds the copies being edited; empty means os.TempDir().
	TempDir string
	// Logger receives what the person need not see; nil means
	// slog.Default().
	Logger *slog.Logger
	// Title also keeps the status line in the terminal's title (OSC 2),
	// where it stays in sight when the scrollback has moved on; for Out a
	// terminal.
	Title bool
	// Clients, when set, tells who is connected to the companion: Run
	// then prints a status line (the connected CLIs and the diffs
	// waiting, in order) each time either changes. Serve sets it to the
	// companion's Server.Clients.
	Clients func() []companion.Client

	// What Serve says and does once the companion serves.

	// Watch sends the files saved in the workspace as the open files
	// (internal/wswatch): with no editor, nothing else reports them.
	Watch bool
	// PrintEnv prints the environment for other shells as export lines
	// (discovery.ExportLines) rather than in the notice that follows.
	PrintEnv bool
	// Hint is printed after those lines, before the first notice.
	Hint string
}

// Frontend is the terminal editor. Its zero value is not usable; call New.
type Frontend struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	queue   []*pendingDiff
	notices []string
	stopped bool
	// wake tells Run that the queue or the notices changed.
	wake chan struct{}

	// singleKey is set by Run when answers are single keys on a terminal;
	// restoreKeys and reenterKeys leave and re-enter that mode.
	singleKey   bool
	restoreKeys func()
	reenterKeys func()
	// prompted is set while a prompt waits at the end of its line; only
	// Run's goroutine uses it.
	prompted bool
	// statusDirty says the connected clients or the queue changed since
	// the status line was last printed; lastStatus is that line (Run's
	// goroutine only).
	statusDirty bool
	lastStatus  string
}

// New returns a Frontend reading answers from opts.In and writing to
// opts.Out.
func New(opts Options) *Frontend {
	if opts.Editor == "" {
		opts.Editor = EditorCommand(os.Getenv)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Frontend{opts: opts, log: log, wake: make(chan struct{}, 1)}
}

var _ companion.Editor = (*Frontend)(nil)

func (f *Frontend) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// notice queues a line for Run to print between prompts, so that output
// from the companion's goroutines never cuts through a diff or an editor.
func (f *Frontend) notice(format string, args ...any) {
	f.mu.Lock()
	f.notices = append(f.notices, fmt.Sprintf(format, args...))
	f.mu.Unlock()
	f.signal()
}

// OpenDiff queues the proposal newContent for filePath. A second proposal
// for a file already waiting replaces the first. It returns at once: the
// diff counts as shown when it is queued, since the terminal shows them in
// order.
func (f *Frontend) OpenDiff(ctx context.Context, filePath, newContent string) error {
	if filePath == "" {
		return errors.New("open diff: empty file path")
	}
	if fi, err := os.Stat(filePath); err == nil && fi.IsDir() {
		return fmt.Errorf("open diff: %s is a directory", filePath)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return ErrClosed
	}
	agent := companion.ProposedBy(ctx)
	if i := f.indexLocked(filePath); i >= 0 {
		d := f.queue[i]
		d.content, d.edited, d.agent = newContent, false, agent
		d.version++
	} else {
		f.queue = append(f.queue, &pendingDiff{path: filePath, content: newContent, agent: agent})
		f.statusDirty = true
	}
	f.signal()
	return nil
}

// CloseDiff drops the diff of filePath, shown or still queued, without
// accepting or rejecting it, and returns its right side as it stands.
func (f *Frontend) CloseDiff(ctx context.Context, filePath string) (string, bool, error) {
	f.mu.Lock()
	i := f.indexLocked(filePath)
	if i < 0 {
		f.mu.Unlock()
		return "", false, nil
	}
	content := f.queue[i].content
	f.queue = slices.Delete(f.queue, i, i+1)
	f.statusDirty = true
	f.notices = append(f.notices, fmt.Sprintf("The CLI closed the diff of %s.", filePath))
	f.mu.Unlock()
	f.signal()
	return content, true, nil
}

// FileWritten reports a file the companion wrote for the CLI.
func (f *Frontend) FileWritten(ctx context.Context, path string) error {
	f.notice("The CLI wrote %s.", path)
	return nil
}

// ClientsChanged tells Run that a CLI connected or disconnected, so that
// it prints the status line again; Serve makes it part of the companion's
// Config.OnClientsChange.
func (f *Frontend) ClientsChanged() {
	f.mu.Lock()
	f.statusDirty = true
	f.mu.Unlock()
	f.signal()
}

// Announce queues a notice for the person, such as where the companion
// serves.
func (f *Frontend) Announce(text string) {
	f.notice("%s", strings.TrimRight(text, "\n"))
}

// answer is what the person chose for a diff.
type answer int

const (
	answerUnknown answer = iota
	answerAccept
	answerReject
	answerEdit
)

func parseAnswer(line string) answer {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "a", "accept", "y", "yes":
		return answerAccept
	case "r", "reject", "n", "no":
		return answerReject
	case "e", "edit":
		return answerEdit
	}
	return answerUnknown
}

// Run shows the queued diffs one at a time and reports each answer to ev,
// until ctx ends or the input does. When the input ends it rejects every
// diff still waiting, because nobody is left to answer them.
func (f *Frontend) Run(ctx context.Context, ev companion.Events) error {
	defer f.stop()
	// On a terminal one key answers: no Enter needed. The mode is undone
	// when Run returns (ctx ends on SIGINT and SIGTERM too) and while
	// $EDITOR runs.
	if restore, ok := singleKeyMode(f.opts.In); ok {
		f.singleKey = true
		f.restoreKeys = restore
		f.reenterKeys = func() {
			if r, ok := singleKeyMode(f.opts.In); ok {
				f.restoreKeys = r
			}
		}
		defer func() { f.restoreKeys() }()
	}
	in := f.readAnswers()
	defer in.close()
	var shown *pendingDiff
	shownVersion := 0
	for {
		shown, shownVersion = f.refresh(shown, shownVersion)
		in.ask()
		var r lineResult
		select {
		case <-ctx.Done():
			// Ctrl-C (SIGINT) or SIGTERM: a diff left waiting would keep
			// the CLI's "Apply this change?" box stuck (gemini-cli#11239),
			// so it is rejected first, as on Ctrl-D. Serve keeps the
			// companion serving until Run returns, so the rejections go out.
			f.endPrompt()
			f.rejectAll(ev, "stopping")
			return nil
		case <-f.wake:
			continue
		case r = <-in.lines:
			in.reading = false
			f.prompted = false // the answer ended the prompt's line
		}
		if r.err != nil {
			f.rejectAll(ev, "input closed")
			if errors.Is(r.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read answers: %w", r.err)
		}
		shown = f.answer(ctx, ev, shown, r.line)
	}
}

// stop marks the front-end stopped (OpenDiff refuses from then on) and
// clears the terminal's title.
func (f *Frontend) stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	if f.opts.Title {
		fmt.Fprint(f.opts.Out, "\x1b]2;\x07")
	}
}

// refresh prints the notices and the status line, then the diff at the
// head of the queue with its prompt when it is not the one on screen
// (shown, at shownVersion), or the prompt again under the notices. It
// returns the diff now on screen.
func (f *Frontend) refresh(shown *pendingDiff, shownVersion int) (*pendingDiff, int) {
	d, version, n, notices := f.head()
	if status := f.status(); status != "" {
		notices = append(notices, status)
	}
	if len(notices) > 0 {
		f.endPrompt()
	}
	for _, msg := range notices {
		fmt.Fprintln(f.opts.Out, msg)
	}
	switch {
	case d != nil && (d != shown || version != shownVersion):
		f.show(d, n)
		f.prompt()
	case d != nil && len(notices) > 0:
		f.prompt()
	}
	return d, version
}

// answer acts on the person's line about shown, the diff on screen (nil
// when none is), and returns the diff still on screen.
func (f *Frontend) answer(ctx context.Context, ev companion.Events, shown *pendingDiff, line string) *pendingDiff {
	if shown == nil {
		if strings.TrimSpace(line) != "" {
			fmt.Fprintln(f.opts.Out, "No diff is waiting for an answer.")
		}
		return nil
	}
	switch parseAnswer(line) {
	case answerAccept:
		if content, ok := f.take(shown); ok {
			ev.DiffAccepted(shown.path, content)
			fmt.Fprintf(f.opts.Out, "Accepted %s.\n", shown.path)
			if gone := f.proposerGone(shown); gone != "" {
				fmt.Fprintf(f.opts.Out, "Nothing was written: %s, and the CLI writes an accepted change itself: the file stays as it was.\n", gone)
			}
		}
		return nil
	case answerReject:
		if _, ok := f.take(shown); ok {
			ev.DiffRejected(shown.path)
			fmt.Fprintf(f.opts.Out, "Rejected %s.\n", shown.path)
		}
		return nil
	case answerEdit:
		f.editDiff(ctx, shown)
		return nil // shown again, whether or not the edit changed it
	}
	fmt.Fprintln(f.opts.Out, "Please answer a (accept), r (reject) or e (edit).")
	f.prompt()
	return shown
}

type lineResult struct {
	line string
	err  error
}

// answers reads the person's answers, one when asked, so that nothing
// reads the terminal while $EDITOR owns it.
type answers struct {
	want    chan struct{}
	lines   chan lineResult
	done    chan struct{}
	reading bool // asked, and the line not yet taken (Run's goroutine)
}

// readAnswers starts the reader of f's input; close stops it.
func (f *Frontend) readAnswers() *answers {
	a := &answers{want: make(chan struct{}, 1), lines: make(chan lineResult), done: make(chan struct{})}
	go func() {
		br := bufio.NewReader(f.opts.In)
		for {
			select {
			case <-a.want:
			case <-a.done:
				return
			}
			var line string
			var err error
			if f.singleKey {
				line, err = f.readKey(br)
			} else {
				line, err = br.ReadString('\n')
			}
			if err != nil && line != "" {
				err = nil
			}
			select {
			case a.lines <- lineResult{line, err}:
			case <-a.done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return a
}

// ask has the reader read the next answer, unless it is reading one.
func (a *answers) ask() {
	if !a.reading {
		a.want <- struct{}{}
		a.reading = true
	}
}

func (a *answers) close() { close(a.done) }

// readKey reads one answer key in single-key mode and echoes it on its
// own line; blanks are skipped and Ctrl-D ends the input.
func (f *Frontend) readKey(br *bufio.Reader) (string, error) {
	for {
		r, _, err := br.ReadRune()
		if err != nil {
			return "", err
		}
		switch r {
		case '\n', '\r', ' ', '\t':
			continue
		case 0x04: // Ctrl-D
			fmt.Fprintln(f.opts.Out)
			return "", io.EOF
		}
		fmt.Fprintf(f.opts.Out, "%c\n", r)
		return string(r), nil
	}
}

// rejectAll rejects every waiting diff, in order, saying why (why is
// "input closed" on Ctrl-D, "stopping" on Ctrl-C).
func (f *Frontend) rejectAll(ev companion.Events, why string) {
	for _, d := range f.drain() {
		ev.DiffRejected(d.path)
		fmt.Fprintf(f.opts.Out, "Rejected %s (%s), so that the CLI does not wait for it.\n", extension.Printable(d.path), why)
	}
}

// show prints the diff of d against the file on disk.
func (f *Frontend) show(d *pendingDiff, n int) {
	content, edited, _, ok := f.snapshot(d)
	if !ok {
		return
	}
	old, isNew, err := readLeft(d.path)
	out := f.opts.Out
	title := "Proposed change"
	if edited {
		title = "Your edit of the proposed change"
	}
	if agent := f.agentOf(d); agent != "" {
		// A constant of the companion's (companion.AgentGemini, …),
		// never text a client sent.
		title = "Proposed by " + agent + ": a change"
		if edited {
			title = "Your edit of the change " + agent + " proposed"
		}
	}
	fmt.Fprintf(out, "\n%s to %s", title, extension.Printable(d.path))
	if isNew {
		fmt.Fprint(out, " (new file)")
	}
	if n > 1 {
		fmt.Fprintf(out, " (%d more waiting)", n-1)
	}
	fmt.Fprintln(out, ":")
	if strings.HasPrefix(filepath.Base(d.path), ide.CheckProbePrefix) {
		fmt.Fprintln(out, "(a test diff from `gemkit ide check`: it checks that diffs reach this terminal; the check closes it by itself)")
	}
	if err != nil {
		fmt.Fprintf(out, "(cannot read the file on disk: %v; diffing against empty)\n", err)
	}
	oldLabel := d.path
	if isNew {
		oldLabel = "/dev/null"
	}
	newLabel := d.path + " (proposed)"
	if edited {
		newLabel = d.path + " (edited)"
	}
	// The proposal is what a model wrote: its control characters are
	// shown escaped, before the diff's own colours are added.
	text := extension.PrintableText(UnifiedDiff(oldLabel, newLabel, old, content))
	if text == "" {
		fmt.Fprintln(out, "(no change from the file on disk)")
		return
	}
	if f.opts.Color {
		text = Colorize(text)
	}
	fmt.Fprint(out, text)
}

func (f *Frontend) prompt() {
	f.prompted = true
	if f.singleKey {
		fmt.Fprint(f.opts.Out, "Accept [a], reject [r], or edit [e] (one key)? ")
		return
	}
	fmt.Fprint(f.opts.Out, "Accept [a], reject [r], or edit [e]? ")
}

// endPrompt ends the line a prompt left the cursor on, if one did.
func (f *Frontend) endPrompt() {
	if f.prompted {
		fmt.Fprintln(f.opts.Out)
		f.prompted = false
	}
}

// readLeft reads the left side of a diff: the file on disk, or empty when
// the file does not exist yet.
func readLeft(path string) (content string, isNew bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", true, nil
	}
	if err != nil {
		return "", false, err
	}
	return string(b), false, nil
}
