package term

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/golden"
)

// recorder is the companion side of a test: it records the outcomes the
// front-end reports. The other events are the companion's business.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

func (r *recorder) Focus(string, *ide.Cursor, string)     {}
func (r *recorder) Selection(string, ide.Cursor, string)  {}
func (r *recorder) Close(string)                          {}
func (r *recorder) Rename(string, string)                 {}
func (r *recorder) Delete(string)                         {}
func (r *recorder) UpdateWorkspace([]string, *bool) error { return nil }
func (r *recorder) DiffAccepted(p, content string)        { r.add("accepted " + p + " " + content) }
func (r *recorder) DiffRejected(p string)                 { r.add("rejected " + p) }
func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// gemkittest.Output is an output stream safe to read while Run writes it.

const promptText = "edit [e]? "

// session runs a Frontend on pipes.
type session struct {
	t    *testing.T
	f    *Frontend
	in   *io.PipeWriter
	out  *gemkittest.Output
	ev   *recorder
	done chan error
}

func start(t *testing.T, opts Options) *session {
	t.Helper()
	return startAfter(t, opts, nil)
}

// startAfter is start with before run on the Frontend before Run starts,
// so that what it queues is all there when Run shows the first diff.
func startAfter(t *testing.T, opts Options, before func(*Frontend)) *session {
	t.Helper()
	pr, pw := io.Pipe()
	out := &gemkittest.Output{}
	opts.In, opts.Out = pr, out
	if opts.TempDir == "" {
		opts.TempDir = t.TempDir()
	}
	if opts.Editor == "" {
		opts.Editor = "false"
	}
	s := &session{t: t, f: New(opts), in: pw, out: out, ev: &recorder{}, done: make(chan error, 1)}
	if before != nil {
		before(s.f)
	}
	go func() { s.done <- s.f.Run(context.Background(), s.ev) }()
	t.Cleanup(func() { pw.Close() })
	return s
}

// waitOut waits until the output satisfies ok.
func (s *session) waitOut(what string, ok func(string) bool) {
	s.t.Helper()
	s.out.WaitFor(s.t, what, ok)
}

func (s *session) waitPrompts(n int) {
	s.t.Helper()
	s.waitOut("prompt", func(o string) bool { return strings.Count(o, promptText) >= n })
}

func (s *session) answer(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write answer: %v", err)
	}
}

// finish closes the input and waits for Run to return.
func (s *session) finish() {
	s.t.Helper()
	s.in.Close()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		s.t.Fatal("Run did not return after the input closed")
	}
}

// writeScript writes an executable editor script into dir.
func writeScript(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAnswers(t *testing.T) {
	for _, tc := range answersCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.disk {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var opts Options
			if tc.editor != "" {
				opts.Editor = writeScript(t, t.TempDir(), tc.editor)
			}
			// Queue every proposal before Run starts, so that the first
			// diff shown counts all of those waiting behind it.
			s := startAfter(t, opts, func(f *Frontend) {
				for _, p := range tc.proposals {
					ctx := context.Background()
					if p.agent != "" {
						ctx = companion.WithProposer(ctx, p.agent)
					}
					if err := f.OpenDiff(ctx, filepath.Join(dir, p.name), p.content); err != nil {
						t.Fatalf("OpenDiff: %v", err)
					}
				}
			})
			for i, a := range tc.answers {
				s.waitPrompts(i + 1)
				s.answer(a)
			}
			if len(tc.proposals) > 0 {
				s.waitPrompts(len(tc.answers))
			}
			s.finish()
			got := s.ev.got()
			for i := range got {
				got[i] = strings.ReplaceAll(got[i], dir+string(filepath.Separator), "")
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("events = %q, want %q", got, tc.want)
			}
			out := s.out.String()
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "\x1b[") {
				t.Errorf("output is coloured though Color is off:\n%q", out)
			}
		})
	}
}

// answerProposal is a change proposed to the file name; agent, when set,
// proposed it (companion.ProposedBy).
type answerProposal struct{ name, content, agent string }

// answersCase is the files on disk, the proposals queued and a person's
// answers to them, with the events and the output they are to give.
type answersCase struct {
	name string
	// disk holds files that exist before the diffs open.
	disk      map[string]string
	proposals []answerProposal
	// editor is a shell script body; "$1" is the copy to edit.
	editor  string
	answers []string
	// want uses NAME for the absolute path of a file.
	want    []string
	wantOut []string
}

// answersCases are TestAnswers' sessions: each answer, editing, the queue
// and the input closing.
func answersCases() []answersCase {
	return []answersCase{
		{
			name:      "accept",
			disk:      map[string]string{"a.txt": "one\ntwo\n"},
			proposals: []answerProposal{{"a.txt", "one\n2\n", ""}},
			answers:   []string{"a"},
			want:      []string{"accepted a.txt one\n2\n"},
			wantOut:   []string{"-two\n", "+2\n", "Accepted "},
		},
		{
			name:      "reject with a long answer",
			disk:      map[string]string{"a.txt": "one\n"},
			proposals: []answerProposal{{"a.txt", "uno\n", ""}},
			answers:   []string{"Reject"},
			want:      []string{"rejected a.txt"},
			wantOut:   []string{"Rejected "},
		},
		{
			name:      "unknown answer asks again",
			disk:      map[string]string{"a.txt": "one\n"},
			proposals: []answerProposal{{"a.txt", "uno\n", ""}},
			answers:   []string{"maybe", "", "y"},
			want:      []string{"accepted a.txt uno\n"},
			wantOut:   []string{"Please answer a (accept), r (reject) or e (edit)."},
		},
		{
			name:      "new file diffs against empty",
			proposals: []answerProposal{{"new.go", "package x\n", ""}},
			answers:   []string{"a"},
			want:      []string{"accepted new.go package x\n"},
			wantOut:   []string{"(new file)", "--- /dev/null\n", "+package x\n"},
		},
		{
			name:      "queued diffs are asked in order",
			disk:      map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"},
			proposals: []answerProposal{{"a.txt", "A\n", ""}, {"b.txt", "B\n", ""}, {"c.txt", "C\n", ""}},
			answers:   []string{"r", "a", "a"},
			want:      []string{"rejected a.txt", "accepted b.txt B\n", "accepted c.txt C\n"},
			wantOut:   []string{"(2 more waiting)", "(1 more waiting)"},
		},
		{
			name:      "edit then accept sends the edited content",
			disk:      map[string]string{"a.txt": "one\n"},
			proposals: []answerProposal{{"a.txt", "uno\n", ""}},
			editor:    `echo "edited by hand" >> "$1"`,
			answers:   []string{"e", "a"},
			want:      []string{"accepted a.txt uno\nedited by hand\n"},
			wantOut:   []string{"Your edit of the proposed change", "(edited)", "+edited by hand\n"},
		},
		{
			name:      "edit then reject",
			disk:      map[string]string{"a.txt": "one\n"},
			proposals: []answerProposal{{"a.txt", "uno\n", ""}},
			editor:    `printf 'two\n' > "$1"`,
			answers:   []string{"edit", "r"},
			want:      []string{"rejected a.txt"},
			wantOut:   []string{"+two\n"},
		},
		{
			name:      "a failing editor keeps the proposal",
			disk:      map[string]string{"a.txt": "one\n"},
			proposals: []answerProposal{{"a.txt", "uno\n", ""}},
			editor:    `echo broken > "$1"; exit 3`,
			answers:   []string{"e", "a"},
			want:      []string{"accepted a.txt uno\n"},
			wantOut:   []string{"Editing failed:", "The proposal is unchanged."},
		},
		{
			name:      "input closing rejects what waits",
			disk:      map[string]string{"a.txt": "a\n", "b.txt": "b\n"},
			proposals: []answerProposal{{"a.txt", "A\n", ""}, {"b.txt", "B\n", ""}},
			want:      []string{"rejected a.txt", "rejected b.txt"},
			wantOut:   []string{"Rejected ", "(input closed)"},
		},
		{
			name:      "the agent that proposed is named",
			disk:      map[string]string{"a.txt": "one\n", "b.txt": "b\n"},
			proposals: []answerProposal{{"a.txt", "uno\n", companion.AgentClaude}, {"b.txt", "B\n", companion.AgentQwen}},
			editor:    `echo "edited by hand" >> "$1"`,
			answers:   []string{"a", "e", "a"},
			want:      []string{"accepted a.txt uno\n", "accepted b.txt B\nedited by hand\n"},
			wantOut:   []string{"Proposed by Claude Code: a change to ", "Proposed by Qwen Code: a change to ", "Your edit of the change Qwen Code proposed to "},
		},
		{
			name:      "a proposal equal to the disk says so",
			disk:      map[string]string{"a.txt": "same\n"},
			proposals: []answerProposal{{"a.txt", "same\n", ""}},
			answers:   []string{"a"},
			want:      []string{"accepted a.txt same\n"},
			wantOut:   []string{"(no change from the file on disk)"},
		},
	}
}

func TestCloseDiff(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	s := start(t, Options{Editor: writeScript(t, t.TempDir(), `echo more >> "$1"`)})
	ctx := context.Background()
	for _, p := range []string{a, b, c} {
		if err := s.f.OpenDiff(ctx, p, "proposal "+filepath.Base(p)+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// Edit the shown diff, then close it: the CLI gets the edited text.
	s.waitPrompts(1)
	s.answer("e")
	s.waitOut("the edited diff", func(o string) bool { return strings.Contains(o, "(edited)") })
	s.waitPrompts(2)
	content, ok, err := s.f.CloseDiff(ctx, a)
	if err != nil || !ok || content != "proposal a\nmore\n" {
		t.Fatalf("CloseDiff(shown) = %q, %v, %v", content, ok, err)
	}
	// A queued diff closes without ever being shown.
	content, ok, err = s.f.CloseDiff(ctx, c)
	if err != nil || !ok || content != "proposal c\n" {
		t.Fatalf("CloseDiff(queued) = %q, %v, %v", content, ok, err)
	}
	if _, ok, _ := s.f.CloseDiff(ctx, c); ok {
		t.Fatal("CloseDiff of a closed diff reported ok")
	}
	if _, ok, _ := s.f.CloseDiff(ctx, filepath.Join(dir, "never")); ok {
		t.Fatal("CloseDiff of an unknown file reported ok")
	}
	// b is next; the answer goes to it.
	s.waitOut("b's diff", func(o string) bool { return strings.Contains(o, "Proposed change to "+b) })
	s.waitPrompts(3)
	s.answer("a")
	s.waitOut("accepted", func(o string) bool { return strings.Contains(o, "Accepted "+b) })
	if err := s.f.FileWritten(ctx, a); err != nil {
		t.Fatal(err)
	}
	s.waitOut("written notice", func(o string) bool { return strings.Contains(o, "The CLI wrote "+a+".") })
	s.finish()
	if got := s.ev.got(); len(got) != 1 || got[0] != "accepted "+b+" proposal b\n" {
		t.Fatalf("events = %q; closing must not accept or reject", got)
	}
	for _, w := range []string{"The CLI closed the diff of " + a, "The CLI closed the diff of " + c} {
		if !strings.Contains(s.out.String(), w) {
			t.Errorf("output lacks %q", w)
		}
	}
	if err := s.f.OpenDiff(ctx, a, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("OpenDiff after Run = %v, want ErrClosed", err)
	}
}

func TestReplacedProposalIsShownAgain(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	s := start(t, Options{})
	ctx := context.Background()
	if err := s.f.OpenDiff(ctx, p, "first\n"); err != nil {
		t.Fatal(err)
	}
	s.waitPrompts(1)
	if err := s.f.OpenDiff(ctx, p, "second\n"); err != nil {
		t.Fatal(err)
	}
	s.waitPrompts(2)
	s.answer("a")
	s.waitOut("accepted", func(o string) bool { return strings.Contains(o, "Accepted") })
	s.finish()
	if got := s.ev.got(); len(got) != 1 || got[0] != "accepted "+p+" second\n" {
		t.Fatalf("events = %q", got)
	}
}

func TestOpenDiffRefusesDirectory(t *testing.T) {
	f := New(Options{In: strings.NewReader(""), Out: io.Discard, Editor: "false"})
	if err := f.OpenDiff(context.Background(), t.TempDir(), "x"); err == nil {
		t.Fatal("OpenDiff of a directory succeeded")
	}
	if err := f.OpenDiff(context.Background(), "", "x"); err == nil {
		t.Fatal("OpenDiff of an empty path succeeded")
	}
}

func TestRunStopsWithContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	f := New(Options{In: pr, Out: io.Discard, Editor: "false"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, &recorder{}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run ignored its context")
	}
}

func TestColor(t *testing.T) {
	diff := UnifiedDiff("a", "b", "x\ny\n", "x\nz\n")
	golden.Check(t, filepath.Join("testdata", "colored.golden"), []byte(Colorize(diff)))
	tests := []struct {
		name    string
		w       io.Writer
		noColor string
		want    bool
	}{
		{"buffer", &bytes.Buffer{}, "", false},
		{"pipe", os.Stdout, "1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "NO_COLOR" {
					return tc.noColor
				}
				return ""
			}
			if got := ColorEnabled(tc.w, getenv); got != tc.want {
				t.Fatalf("ColorEnabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEditorCommand(t *testing.T) {
	tests := []struct {
		visual, editor, want string
	}{
		{"code --wait", "nano", "code --wait"},
		{"", "nano", "nano"},
		{"  ", "", "vi"},
	}
	for _, tc := range tests {
		env := map[string]string{"VISUAL": tc.visual, "EDITOR": tc.editor}
		if got := EditorCommand(func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("EditorCommand(%q, %q) = %q, want %q", tc.visual, tc.editor, got, tc.want)
		}
	}
}

// TestConcurrentOpenClose opens and closes diffs from many goroutines
// while the person answers: every diff ends exactly once, either closed
// by the CLI or answered, or rejected when the input ends.
func TestConcurrentOpenClose(t *testing.T) {
	dir := t.TempDir()
	s := start(t, Options{})
	ctx := context.Background()
	const n = 40
	closed := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := filepath.Join(dir, fmt.Sprintf("f%d", i))
			if err := s.f.OpenDiff(ctx, p, "x\n"); err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				if _, ok, _ := s.f.CloseDiff(ctx, p); ok {
					closed <- p
				}
			}
		}()
	}
	for i := range 10 {
		s.waitPrompts(i + 1)
		s.answer("a")
	}
	wg.Wait()
	s.finish()
	close(closed)
	ended := map[string]int{}
	for p := range closed {
		ended[p]++
	}
	for _, e := range s.ev.got() {
		fields := strings.Fields(e)
		ended[fields[1]]++
	}
	if len(ended) != n {
		t.Fatalf("%d diffs ended, want %d", len(ended), n)
	}
	for p, c := range ended {
		if c != 1 {
			t.Errorf("%s ended %d times", p, c)
		}
	}
}
