// Package term is gemkit's terminal front-end: an editor for the IDE
// companion that lives in the terminal where `gemkit ide serve` runs. It
// shows each proposed change as a unified diff and asks the person to
// accept it, reject it or edit it in $EDITOR, one diff at a time and in the
// order they came. Given the companion's Server, it also prints a status
// line of the CLIs connected and the diffs waiting whenever either
// changes.
//
// A Frontend is a companion.Editor: the companion calls OpenDiff, CloseDiff
// and FileWritten from its own goroutines, and Run, in the goroutine that
// owns the terminal, turns the person's answers into companion.Events.
package term

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/companion"
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
	// EnvShown says the caller already printed the environment for other
	// shells (gemkit ide serve --print-env), so Run does not repeat it.
	EnvShown bool
	// Title also keeps the status line in the terminal's title (OSC 2),
	// where it stays in sight when the scrollback has moved on; for Out a
	// terminal.
	Title bool
}

// ColorEnabled reports whether output to w should be coloured: only when w
// is a terminal and NO_COLOR is not set to a non-empty value
// (https://no-color.org).
func ColorEnabled(w io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// EditorCommand returns the person's editor: $VISUAL, else $EDITOR, else vi.
func EditorCommand(getenv func(string) string) string {
	for _, name := range []string{"VISUAL", "EDITOR"} {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
	}
	return "vi"
}

// pendingDiff is one proposed change waiting for an answer.
type pendingDiff struct {
	path string
	// content is the right side as it stands: the proposal, or the
	// person's edit of it.
	content string
	edited  bool
	// version changes whenever content does, so that Run shows the diff
	// again.
	version int
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
	if i := f.indexLocked(filePath); i >= 0 {
		d := f.queue[i]
		d.content, d.edited = newContent, false
		d.version++
	} else {
		f.queue = append(f.queue, &pendingDiff{path: filePath, content: newContent})
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
// it prints the status line again; it is the companion's
// Config.OnClientsChange.
func (f *Frontend) ClientsChanged() {
	f.mu.Lock()
	f.statusDirty = true
	f.mu.Unlock()
	f.signal()
}

// Announce queues a notice for the person; the CLI uses it to say where
// the companion is serving.
func (f *Frontend) Announce(text string) {
	f.notice("%s", strings.TrimRight(text, "\n"))
}

func (f *Frontend) indexLocked(path string) int {
	return slices.IndexFunc(f.queue, func(d *pendingDiff) bool { return d.path == path })
}

// head returns the diff to ask about, its version, its place and the
// queue length, and takes the notices to print.
func (f *Frontend) head() (d *pendingDiff, version, n int, notices []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	notices, f.notices = f.notices, nil
	if len(f.queue) == 0 {
		return nil, 0, 0, notices
	}
	return f.queue[0], f.queue[0].version, len(f.queue), notices
}

// take removes d from the queue and reports whether it was still there,
// so that an answer never resolves a diff the CLI closed meanwhile.
func (f *Frontend) take(d *pendingDiff) (content string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.Index(f.queue, d)
	if i < 0 {
		return "", false
	}
	f.queue = slices.Delete(f.queue, i, i+1)
	f.statusDirty = true
	return d.content, true
}

// snapshot returns d's right side and whether it is the person's edit, if
// d is still waiting.
func (f *Frontend) snapshot(d *pendingDiff) (content string, edited bool, version int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.queue, d) {
		return "", false, 0, false
	}
	return d.content, d.edited, d.version, true
}

// setEdited stores the person's edit of d, unless d was closed or replaced
// by a newer proposal while the editor ran.
func (f *Frontend) setEdited(d *pendingDiff, version int, content string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.queue, d) || d.version != version {
		return false
	}
	if content == d.content {
		// Quit without a change (:q!): the proposal stands as it was.
		return true
	}
	d.content, d.edited = content, true
	d.version++
	return true
}

type lineResult struct {
	line string
	err  error
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

// Serving is what a companion tells about how to reach it. The
// companion's Server has these methods; when the Events given to Run have
// them too, Run prints the env line for another shell as soon as the
// discovery file exists.
type Serving interface {
	// Ready is closed once the discovery file is written.
	Ready() <-chan struct{}
	// Env holds the variables a shell needs to reach the companion.
	Env() map[string]string
}

// ClientLister tells who is connected to the companion; the companion's
// Server has it. When the Events given to Run have it too, Run prints a
// status line (the connected CLIs and the diffs waiting, in order) each
// time either changes.
type ClientLister interface {
	Clients() []companion.Client
}

// Run shows the queued diffs one at a time and reports each answer to ev,
// until ctx ends or the input does. When the input ends it rejects every
// diff still waiting, because nobody is left to answer them.
func (f *Frontend) Run(ctx context.Context, ev companion.Events) error {
	lister, _ := ev.(ClientLister)
	want := make(chan struct{}, 1)
	lines := make(chan lineResult)
	done := make(chan struct{})
	defer close(done)
	if sv, ok := ev.(Serving); ok {
		go func() {
			select {
			case <-sv.Ready():
				var env map[string]string
				if !f.opts.EnvShown {
					env = sv.Env()
				}
				f.Announce(ServingText(env))
			case <-done:
			}
		}()
	}
	defer func() {
		f.mu.Lock()
		f.stopped = true
		f.mu.Unlock()
		if f.opts.Title {
			fmt.Fprint(f.opts.Out, "\x1b]2;\x07")
		}
	}()
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
	// The reader reads an answer only when asked, so that nothing reads
	// the terminal while $EDITOR owns it.
	go func() {
		br := bufio.NewReader(f.opts.In)
		for {
			select {
			case <-want:
			case <-done:
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
			case lines <- lineResult{line, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var (
		shown        *pendingDiff
		shownVersion int
		reading      bool
	)
	for {
		d, version, n, notices := f.head()
		if status := f.status(lister); status != "" {
			notices = append(notices, status)
		}
		if len(notices) > 0 && f.prompted {
			// The prompt left the cursor at the end of its line.
			fmt.Fprintln(f.opts.Out)
			f.prompted = false
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
		shown, shownVersion = d, version
		if !reading {
			want <- struct{}{}
			reading = true
		}

		var r lineResult
		select {
		case <-ctx.Done():
			// Ctrl-C (SIGINT) or SIGTERM: a diff left waiting would keep
			// the CLI's "Apply this change?" box stuck (gemini-cli#11239),
			// so it is rejected first, as on Ctrl-D. The caller keeps the
			// companion serving until Run returns, so the rejections go out.
			if f.prompted {
				fmt.Fprintln(f.opts.Out)
				f.prompted = false
			}
			f.rejectAll(ev, "stopping")
			return nil
		case <-f.wake:
			continue
		case r = <-lines:
			reading = false
			f.prompted = false // the answer ended the prompt's line
		}
		if r.err != nil {
			f.rejectAll(ev, "input closed")
			if errors.Is(r.err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read answers: %w", r.err)
		}
		if shown == nil {
			if strings.TrimSpace(r.line) != "" {
				fmt.Fprintln(f.opts.Out, "No diff is waiting for an answer.")
			}
			continue
		}
		switch parseAnswer(r.line) {
		case answerAccept:
			if content, ok := f.take(shown); ok {
				ev.DiffAccepted(shown.path, content)
				fmt.Fprintf(f.opts.Out, "Accepted %s.\n", shown.path)
			}
			shown = nil
		case answerReject:
			if _, ok := f.take(shown); ok {
				ev.DiffRejected(shown.path)
				fmt.Fprintf(f.opts.Out, "Rejected %s.\n", shown.path)
			}
			shown = nil
		case answerEdit:
			f.editDiff(ctx, shown)
			// Show the diff again whether or not the edit changed it.
			shown = nil
		default:
			fmt.Fprintln(f.opts.Out, "Please answer a (accept), r (reject) or e (edit).")
			f.prompt()
		}
	}
}

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

// status returns the status line to print, or "" when lister is nil or
// nothing it shows changed.
func (f *Frontend) status(lister ClientLister) string {
	if lister == nil {
		return ""
	}
	f.mu.Lock()
	dirty := f.statusDirty
	f.statusDirty = false
	var queue []string
	if dirty {
		for _, d := range f.queue {
			queue = append(queue, d.path)
		}
	}
	f.mu.Unlock()
	if !dirty {
		return ""
	}
	line := StatusText(lister.Clients(), queue)
	if line == f.lastStatus {
		return ""
	}
	f.lastStatus = line
	if f.opts.Title {
		fmt.Fprintf(f.opts.Out, "\x1b]2;gemkit ide serve: %s\x07", titleSafe(strings.TrimPrefix(line, "Status: ")))
	}
	return line
}

// StatusText is the status line: the CLIs connected, first connected
// first, and the diffs waiting for an answer, in the order they will be
// asked.
func StatusText(clients []companion.Client, queue []string) string {
	var b strings.Builder
	b.WriteString("Status: ")
	if len(clients) == 0 {
		b.WriteString("no CLI connected")
	} else {
		names := make([]string, len(clients))
		for i, c := range clients {
			names[i] = ClientLabel(c)
		}
		fmt.Fprintf(&b, "%s connected: %s", counted(len(clients), "CLI"), strings.Join(names, ", "))
	}
	b.WriteString("; ")
	if len(queue) == 0 {
		b.WriteString("no diff waiting.")
		return b.String()
	}
	waiting := make([]string, len(queue))
	for i, p := range queue {
		waiting[i] = fmt.Sprintf("%d. %s", i+1, p)
	}
	fmt.Fprintf(&b, "%s waiting: %s.", counted(len(queue), "diff"), strings.Join(waiting, ", "))
	return b.String()
}

// ClientLabel names a connected client as a person knows it: the agent
// the companion recognised (companion.Client.Agent: "Gemini CLI 0.61.0",
// "Qwen Code 0.24.4", "Claude Code 2.1.330"), else the name it gave with
// its transport; then its process and folder where known, which tell two
// CLIs of one name apart, and whether it came through the stdio bridge.
func ClientLabel(c companion.Client) string {
	name, version := strings.TrimSpace(c.Name), c.Version
	switch {
	case c.Agent != "":
		name, version = c.Agent, c.AgentVersion
	case name == "":
		name = "an unnamed client"
	}
	label := strings.TrimSpace(name + " " + version)
	var where []string
	if c.Agent == "" {
		where = append(where, transportLabel(c.Transport))
	}
	if c.PID != 0 {
		where = append(where, fmt.Sprintf("pid %d", c.PID))
	}
	if c.Dir != "" {
		where = append(where, "in "+homeShort(c.Dir))
	}
	if c.Bridged {
		where = append(where, "through the stdio bridge")
	}
	if len(where) > 0 {
		label += " (" + strings.Join(where, ", ") + ")"
	}
	return label
}

// homeShort writes a path under the home folder as ~/….
func homeShort(p string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		if rel, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return "~/" + rel
		}
	}
	return p
}

// titleSafe drops the control characters a terminal title cannot hold
// (a BEL or ESC would end or break the escape sequence).
func titleSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// counted is "1 diff", "2 diffs".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func transportLabel(t string) string {
	switch t {
	case companion.TransportHTTP:
		return "HTTP"
	case companion.TransportStream:
		return "WebSocket"
	case companion.TransportClaude:
		return "Claude Code"
	}
	return t
}

// rejectAll rejects every waiting diff, in order, saying why (why is
// "input closed" on Ctrl-D, "stopping" on Ctrl-C).
func (f *Frontend) rejectAll(ev companion.Events, why string) {
	f.mu.Lock()
	queue := f.queue
	f.queue = nil
	f.stopped = true
	f.mu.Unlock()
	for _, d := range queue {
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

// editDiff lets the person edit a copy of d's right side in their editor
// and keeps the result as d's new right side.
func (f *Frontend) editDiff(ctx context.Context, d *pendingDiff) {
	content, _, version, ok := f.snapshot(d)
	if !ok {
		return
	}
	if f.singleKey {
		f.restoreKeys()
	}
	edited, err := f.runEditor(ctx, d.path, content)
	if f.singleKey {
		f.reenterKeys()
	}
	if err != nil {
		fmt.Fprintf(f.opts.Out, "Editing failed: %v. The proposal is unchanged.\n", err)
		return
	}
	if !f.setEdited(d, version, edited) {
		fmt.Fprintf(f.opts.Out, "The diff of %s changed while you edited it; your edit was dropped.\n", d.path)
	}
}

// runEditor runs the person's editor on a copy of content (see Edit).
func (f *Frontend) runEditor(ctx context.Context, path, content string) (string, error) {
	f.log.Debug("running editor", "editor", f.opts.Editor, "file", path)
	return Edit(ctx, EditOptions{Editor: f.opts.Editor, In: f.opts.In, Out: f.opts.Out, TempDir: f.opts.TempDir}, path, content)
}

// EditOptions say how Edit runs the person's editor.
type EditOptions struct {
	// Editor is the shell command (EditorCommand); the file is its last
	// argument.
	Editor string
	// In is the terminal the editor reads, when it is a file; Out gets
	// its output.
	In  io.Reader
	Out io.Writer
	// TempDir holds the copy; empty means os.TempDir().
	TempDir string
}

// Edit writes content to a private temporary file named like path (so
// that the editor picks the right syntax), runs the editor on it and
// returns what the person saved. The terminal front-end and the agent's
// terminal review both use it.
func Edit(ctx context.Context, o EditOptions, path, content string) (string, error) {
	tmp, err := os.CreateTemp(o.TempDir, "gemkit-edit-*-"+filepath.Base(path))
	if err != nil {
		return "", fmt.Errorf("create the copy to edit: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write the copy to edit: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write the copy to edit: %w", err)
	}
	// Like git, run the editor through the shell so that a command with
	// arguments ("code --wait") works; the file is passed as "$1".
	cmd := exec.CommandContext(ctx, "sh", "-c", o.Editor+` "$1"`, "sh", name)
	if in, ok := o.In.(*os.File); ok {
		cmd.Stdin = in
	}
	cmd.Stdout = o.Out
	cmd.Stderr = o.Out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("editor %q: %w", o.Editor, err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("read the edited copy: %w", err)
	}
	return string(b), nil
}
