package editors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// emacsMarksForm returns, for each line of both buffers of the proposal
// of a path (%s), the diff faces of the overlays on it, each with the
// text it covers on that line: "diff-removed:the beta line
// diff-refine-removed:beta". Neovim and Vim show a proposal in their
// diff mode; this is what Emacs shows in its place.
const emacsMarksForm = `(let ((d (gethash %s gemkit--diffs))
      (marks (lambda (b)
        (with-current-buffer b
          (save-excursion
            (goto-char (point-min))
            (let (lines)
              (while (not (eobp))
                (let ((bol (line-beginning-position)) (eol (line-end-position)) faces)
                  (dolist (ov (overlays-in bol (min (point-max) (1+ eol))))
                    (let ((f (overlay-get ov 'face)))
                      (when (and f (symbolp f) (string-prefix-p "diff-" (symbol-name f))
                                 (< (overlay-start ov) (overlay-end ov)))
                        (push (concat (symbol-name f) ":"
                                      (buffer-substring-no-properties (max bol (overlay-start ov)) (min eol (overlay-end ov))))
                              faces))))
                  (push (string-join (sort faces #'string<) " ") lines))
                (forward-line 1))
              (vconcat (nreverse lines))))))))
  (if d
      (list (cons 'left (funcall marks (gemkit--diff-left d)))
            (cons 'right (funcall marks (gemkit--diff-right d))))
    :null))`

type emacsMarks struct{ Left, Right []string }

func (d *emacsDriver) marks(t *testing.T, path string) emacsMarks {
	t.Helper()
	var m emacsMarks
	if err := json.Unmarshal(d.eval(t, fmt.Sprintf(emacsMarksForm, elispString(path))), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitMarks waits until the proposal of path shows want.
func (d *emacsDriver) waitMarks(t *testing.T, path, what string, want emacsMarks) {
	t.Helper()
	var got emacsMarks
	if !gemkittest.Poll(waitTimeout, 20*time.Millisecond, func() bool {
		got = d.marks(t, path)
		return reflect.DeepEqual(got, want)
	}) {
		t.Fatalf("%s: the proposal's marks are\n left  %q\n right %q\nwant\n left  %q\n right %q", what, got.Left, got.Right, want.Left, want.Right)
	}
}

// TestEmacsProposalMarksChanges opens a proposal in the real Emacs (-nw,
// in a tmux pane) and reads the highlights of its two buffers: the
// changed and removed lines of the file in diff-removed, the changed
// and added lines of the proposal in diff-added, the changed words in
// diff-refine-removed and diff-refine-added; their lines side by side
// on the screen. An edit typed into the
// proposal moves them, undo moves them back; C-c C-n steps through the
// changes with the file's window following; the file on disk stays as
// it was until C-c C-c accepts the proposal with its text.
func TestEmacsProposalMarksChanges(t *testing.T) {
	t.Parallel()
	emacs := requireEditor(t, "emacs", "emacs-nox")
	clientBin := requireEditor(t, "emacsclient", "emacs-nox")
	tmuxBin := requireEditor(t, "tmux", "tmux")
	h := newHarness(t)
	const file = "alpha\nthe beta line\ngamma\ndelta\nepsilon\n"
	const proposal = "alpha\nthe new line\ngamma\nepsilon\nzeta\n"
	h.write(t, "list.txt", file)
	path := h.path("list.txt")
	d := startEmacs(t, h, emacs, clientBin, tmuxBin, gemkittest.Gemkit(t))
	discoveryFile(t, h, d.PID())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, _, err := client.Connect(ctx, client.Options{
		Cwd: h.ws, Dir: h.discoveryDir, IDEPID: d.PID(),
		Getenv: func(string) string { return "" }, Host: "127.0.0.1",
	})
	if err != nil {
		t.Fatalf("connect to the editor's companion: %v", err)
	}
	defer c.Close(context.Background())

	pd, err := c.StartDiff(ctx, path, proposal)
	if err != nil {
		t.Fatalf("openDiff: %v", err)
	}
	opened := emacsMarks{
		Left:  []string{"", "diff-refine-removed:beta diff-removed:the beta line", "", "diff-removed:delta", ""},
		Right: []string{"", "diff-added:the new line diff-refine-added:new", "", "", "diff-added:zeta"},
	}
	if got := d.marks(t, path); !reflect.DeepEqual(got, opened) {
		t.Fatalf("the proposal as shown is marked\n left  %q\n right %q\nwant\n left  %q\n right %q", got.Left, got.Right, opened.Left, opened.Right)
	}
	// Filler rows (display only) keep the lines after a removed or an
	// added line side by side, as Vim's diff mode does: the screen shows
	// "delta" beside a blank row, "epsilon" beside "epsilon", a blank
	// row beside "zeta".
	waitScreen(t, d.tmuxPane.tui(t).Screen, "the two sides' lines side by side", func(s string) bool {
		want := [][2]string{{"alpha", "alpha"}, {"the beta line", "the new line"}, {"gamma", "gamma"}, {"delta", ""}, {"epsilon", "epsilon"}, {"", "zeta"}}
		got := sideBySideRows(s)
		for i := range got {
			if i+len(want) <= len(got) && reflect.DeepEqual(got[i:i+len(want)], want) {
				return true
			}
		}
		return false
	})

	// Typed at the start of the proposal, as a person edits it.
	d.eval(t, "(progn (select-window (get-buffer-window (gemkit--diff-right (gethash "+elispString(path)+" gemkit--diffs)))) t)")
	d.keys(t, "", "M-<")
	d.keys(t, "first ")
	d.waitMarks(t, path, "after typing on line 1", emacsMarks{
		Left:  []string{"diff-removed:alpha", "diff-refine-removed:beta diff-removed:the beta line", "", "diff-removed:delta", ""},
		Right: []string{"diff-added:first alpha diff-refine-added:first", "diff-added:the new line diff-refine-added:new", "", "", "diff-added:zeta"},
	})
	d.keys(t, "", "C-x", "u")
	d.waitMarks(t, path, "after undo", opened)

	// C-c C-n from the top: the proposal's changes in turn, the file's
	// window at the same change (after line 5 for the added line).
	d.keys(t, "", "M-<")
	for _, want := range [][2]int{{2, 2}, {4, 4}, {5, 6}} {
		d.keys(t, "", "C-c", "C-n")
		waitFor(t, "C-c C-n at the next change", func() bool {
			var lines [2]int
			_ = json.Unmarshal(d.eval(t, fmt.Sprintf(`(let ((d (gethash %s gemkit--diffs)))
  (vconcat (mapcar (lambda (b) (with-current-buffer b (line-number-at-pos (window-point (get-buffer-window b)))))
          (list (gemkit--diff-right d) (gemkit--diff-left d)))))`, elispString(path))), &lines)
			return lines == want
		})
	}

	if b, err := os.ReadFile(path); err != nil || string(b) != file {
		t.Fatalf("the file before the accept: %q (%v), want it untouched", b, err)
	}
	d.Accept(t, path)
	out, err := pd.Wait(ctx)
	if err != nil || !out.Accepted || out.Content != proposal {
		t.Fatalf("accepted diff: outcome %+v, err %v; want accepted with the proposal as sent (the edit undone)", out, err)
	}
	if _, ok := d.Diff(t, path); ok {
		t.Fatal("the diff view is still open after accepting")
	}
	d.Quit(t)
	select {
	case <-d.Exited():
	case <-time.After(waitTimeout):
		t.Fatal("emacs did not exit")
	}
}

// sideBySideRows reads the screen's lines that show the two sides of a
// diff, split at the windows' border, each side trimmed.
func sideBySideRows(s string) [][2]string {
	var out [][2]string
	for _, line := range strings.Split(s, "\n") {
		if l, r, ok := strings.Cut(line, "|"); ok {
			out = append(out, [2]string{strings.TrimSpace(l), strings.TrimSpace(r)})
		}
	}
	return out
}
