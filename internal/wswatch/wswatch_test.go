package wswatch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// recorder is a Sink that keeps what it was told, in order.
type recorder struct {
	mu     sync.Mutex
	events []string // "focus PATH" or "delete PATH"
	wake   chan struct{}
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{}, 1)} }

func (r *recorder) Focus(path string, _ *ide.Cursor, _ string) { r.add("focus " + path) }
func (r *recorder) Delete(path string)                         { r.add("delete " + path) }

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// waitFor waits until the recorder holds event e and returns what it holds.
func (r *recorder) waitFor(t *testing.T, e string) []string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if got := r.snapshot(); slices.Contains(got, e) {
			return got
		}
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("no %q within 20s; got %q", e, r.snapshot())
		}
	}
}

// start watches opts.Roots and runs the watcher into sink until the test
// ends.
func start(t *testing.T, opts Options, sink Sink) *Watcher {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	w, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx, sink)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// focused returns the paths focused, relative to dir.
func focused(dir string, events []string) []string {
	var out []string
	for _, e := range events {
		if p, ok := strings.CutPrefix(e, "focus "); ok {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

// TestIgnoreRules saves files the rules ignore and files they do not, then
// a last file: once that is reported, every earlier save that counts has
// been (one notification queue, in order), and only those.
func TestIgnoreRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// files exist before the watcher starts; saves are written after.
		files map[string]string
		saves []string
		// repo makes ws a subfolder "ws" of a git work tree.
		repo bool
		want []string
	}{
		{
			name: "root rules, negation, anchors, folders",
			files: map[string]string{
				".gitignore":     "*.log\n!keep.log\nbuild/\n/dist\n# a comment\n\n",
				"build/old.txt":  "",
				"dist/old.txt":   "",
				"sub/dist/a.txt": "",
			},
			saves: []string{"a.go", "x.log", "keep.log", "build/out.txt", "build/deep/o.txt", "dist/z.txt", "sub/dist/a.txt", "sub/x.log"},
			want:  []string{"a.go", "keep.log", "sub/dist/a.txt"},
		},
		{
			name: "nested .gitignore overrides the root's",
			files: map[string]string{
				".gitignore":     "*.txt\n",
				"sub/.gitignore": "!*.txt\ngen/\n",
				"sub/gen/a.md":   "",
			},
			saves: []string{"top.txt", "sub/in.txt", "sub/gen/a.md", "other/x.txt"},
			want:  []string{"sub/in.txt"},
		},
		{
			name:  "git's folder and editors' temporaries are always skipped",
			files: map[string]string{".git/HEAD": "ref: refs/heads/main\n"},
			saves: []string{".git/HEAD", ".git/index", "notes.txt~", ".notes.txt.swp", "#notes.txt#", ".#notes.txt", "4913", "notes.txt"},
			want:  []string{"notes.txt"},
		},
		{
			name: "the enclosing repository's rules and info/exclude apply",
			repo: true,
			files: map[string]string{
				"../.gitignore":          "secret*\nws/cache/\n",
				"../.git/info/exclude":   "*.bak\n",
				"../.git/HEAD":           "ref: refs/heads/main\n",
				"cache/c.txt":            "",
				"../elsewhere/other.txt": "",
			},
			saves: []string{"secret.txt", "a.bak", "cache/c.txt", "plain.txt"},
			want:  []string{"plain.txt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := tempDir(t)
			if tc.repo {
				ws = filepath.Join(ws, "ws")
			}
			for name, content := range tc.files {
				write(t, filepath.Join(ws, name), content)
			}
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			rec := newRecorder()
			start(t, Options{Roots: []string{ws}, Debounce: 20 * time.Millisecond}, rec)
			for _, s := range tc.saves {
				write(t, filepath.Join(ws, s), "saved "+s)
			}
			last := filepath.Join(ws, "zz-last.md")
			write(t, last, "last")
			got := focused(ws, rec.waitFor(t, "focus "+last))
			want := append(slices.Clone(tc.want), "zz-last.md")
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("reported %q, want %q", got, want)
			}
		})
	}
}

// TestIgnoreFileChanges: a rule added to .gitignore while watching applies
// to the next save, and a folder it stops ignoring is watched from then on.
func TestIgnoreFileChanges(t *testing.T) {
	t.Parallel()
	ws := tempDir(t)
	write(t, filepath.Join(ws, ".gitignore"), "gen/\n")
	write(t, filepath.Join(ws, "gen", "old.txt"), "")
	rec := newRecorder()
	w := start(t, Options{Roots: []string{ws}, Debounce: 20 * time.Millisecond}, rec)
	if n := w.Dirs(); n != 1 {
		t.Fatalf("watching %d folders, want 1 (gen/ is ignored)", n)
	}
	write(t, filepath.Join(ws, ".gitignore"), "late.txt\n")
	write(t, filepath.Join(ws, "late.txt"), "ignored now")
	write(t, filepath.Join(ws, "gen", "new.txt"), "watched now")
	write(t, filepath.Join(ws, "zz-last.txt"), "")
	got := focused(ws, rec.waitFor(t, "focus "+filepath.Join(ws, "zz-last.txt")))
	if slices.Contains(got, "late.txt") {
		t.Errorf("late.txt was reported after .gitignore listed it: %q", got)
	}
	// gen/ was watched once .gitignore stopped ignoring it, but the save
	// in it may race the new watch; the watch itself is what must follow.
	if n := w.Dirs(); n != 2 {
		t.Errorf("watching %d folders, want 2 once gen/ is no longer ignored", n)
	}
}

// TestFolderCap: past MaxDirs no further folder is watched, and one clear
// log line says so.
func TestFolderCap(t *testing.T) {
	t.Parallel()
	ws := tempDir(t)
	for _, d := range []string{"a", "b", "c", "d"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var logs gemkittest.Output
	rec := newRecorder()
	w := start(t, Options{Roots: []string{ws}, MaxDirs: 3, Debounce: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}, rec)
	if n := w.Dirs(); n != 3 {
		t.Errorf("watching %d folders, want the cap, 3", n)
	}
	if l := logs.String(); strings.Count(l, "watching the first 3 folders only") != 1 || !strings.Contains(l, filepath.Join(ws, "c")) {
		t.Errorf("want one log line naming the cap and the first folder left out; logs:\n%s", l)
	}
	// Folders are walked in lexical order: the root, a and b are watched.
	write(t, filepath.Join(ws, "d", "x.txt"), "")
	write(t, filepath.Join(ws, "a", "x.txt"), "")
	write(t, filepath.Join(ws, "zz-last.txt"), "")
	got := focused(ws, rec.waitFor(t, "focus "+filepath.Join(ws, "zz-last.txt")))
	if want := []string{"a/x.txt", "zz-last.txt"}; !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q", got, want)
	}
}

// TestDebounce: a burst of writes to one file is one save.
func TestDebounce(t *testing.T) {
	t.Parallel()
	ws := tempDir(t)
	rec := newRecorder()
	start(t, Options{Roots: []string{ws}, Debounce: 2 * time.Second}, rec)
	path := filepath.Join(ws, "busy.txt")
	for i := range 50 {
		write(t, path, fmt.Sprint(i))
	}
	rec.waitFor(t, "focus "+path)
	// A save after the burst's report: the watcher reads events in the
	// order the kernel queued them and reports settled files in that
	// order, so a second report of the burst would come before this one.
	after := filepath.Join(ws, "after.txt")
	write(t, after, "")
	got := rec.waitFor(t, "focus "+after)
	if n := slices.Index(got, "focus "+after); n != 1 {
		t.Errorf("50 writes in a burst gave %d reports, want 1: %q", n, got[:n])
	}
}

// TestPendingBound: past maxPending waiting changes the oldest is dropped.
func TestPendingBound(t *testing.T) {
	w := &Watcher{pending: map[string]change{}}
	for i := range maxPending + 44 {
		w.mark(fmt.Sprintf("/ws/f%03d", i))
	}
	if len(w.pending) != maxPending {
		t.Fatalf("%d changes waiting, want the bound %d", len(w.pending), maxPending)
	}
	for i := range 44 {
		if _, ok := w.pending[fmt.Sprintf("/ws/f%03d", i)]; ok {
			t.Fatalf("the oldest change f%03d was kept", i)
		}
	}
}

func TestAlwaysSkipped(t *testing.T) {
	for name, want := range map[string]bool{
		".git": true, "4913": true, "a.go~": true, ".a.go.swp": true, ".a.go.swx": true, "#a.go#": true,
		".#a.go": true, "x.tmp": true, "a.go": false, ".gitignore": false, "swap.go": false, ".github": false,
	} {
		if got := alwaysSkipped(name); got != want {
			t.Errorf("alwaysSkipped(%q) = %v, want %v", name, got, want)
		}
	}
}

// serveCompanion runs a real companion for ws and returns it.
func serveCompanion(t *testing.T, ws string) *companion.Server {
	t.Helper()
	srv, err := companion.New(companion.Config{
		Workspace:    []string{ws},
		PID:          os.Getpid(),
		DiscoveryDir: t.TempDir(),
		Debounce:     time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv
}

// waitOpenFiles waits until the companion's open files are want (paths
// relative to ws, newest first) and returns them.
func waitOpenFiles(t *testing.T, srv *companion.Server, ws string, want ...string) []ide.File {
	t.Helper()
	// The companion's open files change after the watcher's debounce, on
	// real inotify that synctest cannot hold.
	var files []ide.File
	var got []string
	if !gemkittest.Poll(20*time.Second, 10*time.Millisecond, func() bool {
		files, got = srv.Context().WorkspaceState.OpenFiles, nil
		for _, f := range files {
			rel, _ := filepath.Rel(ws, f.Path)
			got = append(got, filepath.ToSlash(rel))
		}
		return slices.Equal(got, want)
	}) {
		t.Fatalf("open files %q, want %q", got, want)
	}
	return files
}

// checkActive checks the context's rules: the newest file alone is
// active, timestamps decrease, no cursor (a save has none).
func checkActive(t *testing.T, files []ide.File) {
	t.Helper()
	for i, f := range files {
		if f.IsActive != (i == 0) {
			t.Errorf("file %d (%s) isActive = %v", i, f.Path, f.IsActive)
		}
		if i > 0 && f.Timestamp >= files[i-1].Timestamp {
			t.Errorf("timestamps not newest first: %d then %d", files[i-1].Timestamp, f.Timestamp)
		}
		if f.Cursor != nil || f.SelectedText != "" {
			t.Errorf("file %s has a cursor or selection from a save", f.Path)
		}
	}
}

// TestSavesAreOpenFiles drives a real companion: saved files become its
// open files, newest first and active, at most ide.MaxOpenFiles.
func TestSavesAreOpenFiles(t *testing.T) {
	t.Parallel()
	ws := tempDir(t)
	srv := serveCompanion(t, ws)
	start(t, Options{Roots: []string{ws}, Debounce: 20 * time.Millisecond}, srv)

	write(t, filepath.Join(ws, "a.txt"), "a")
	waitOpenFiles(t, srv, ws, "a.txt")
	write(t, filepath.Join(ws, "src", "b.go"), "b") // in a folder made after the start
	checkActive(t, waitOpenFiles(t, srv, ws, "src/b.go", "a.txt"))
	write(t, filepath.Join(ws, "a.txt"), "a again")
	checkActive(t, waitOpenFiles(t, srv, ws, "a.txt", "src/b.go"))

	var want []string
	for i := range 12 {
		name := fmt.Sprintf("f%02d.txt", i)
		write(t, filepath.Join(ws, name), name)
		want = slices.Insert(want, 0, name)
	}
	checkActive(t, waitOpenFiles(t, srv, ws, want[:ide.MaxOpenFiles]...))
}

// TestDeletionsAndRenames: a deleted file leaves the open files; a renamed
// one is the newest under its new name; a folder removed or moved away
// takes its files with it.
func TestDeletionsAndRenames(t *testing.T) {
	t.Parallel()
	ws := tempDir(t)
	srv := serveCompanion(t, ws)
	start(t, Options{Roots: []string{ws}, Debounce: 20 * time.Millisecond}, srv)

	write(t, filepath.Join(ws, "a.txt"), "a")
	waitOpenFiles(t, srv, ws, "a.txt")
	write(t, filepath.Join(ws, "b.txt"), "b")
	waitOpenFiles(t, srv, ws, "b.txt", "a.txt")

	if err := os.Remove(filepath.Join(ws, "a.txt")); err != nil {
		t.Fatal(err)
	}
	waitOpenFiles(t, srv, ws, "b.txt")

	write(t, filepath.Join(ws, "c.txt"), "c")
	waitOpenFiles(t, srv, ws, "c.txt", "b.txt")
	if err := os.Rename(filepath.Join(ws, "b.txt"), filepath.Join(ws, "renamed.txt")); err != nil {
		t.Fatal(err)
	}
	checkActive(t, waitOpenFiles(t, srv, ws, "renamed.txt", "c.txt"))

	// An editor's safe save (write a temporary file, rename it over the
	// original) is a save of the original.
	tmp := filepath.Join(ws, ".c.txt.tmp")
	write(t, tmp, "c, saved safely")
	if err := os.Rename(tmp, filepath.Join(ws, "c.txt")); err != nil {
		t.Fatal(err)
	}
	checkActive(t, waitOpenFiles(t, srv, ws, "c.txt", "renamed.txt"))

	write(t, filepath.Join(ws, "d", "x.txt"), "x")
	waitOpenFiles(t, srv, ws, "d/x.txt", "c.txt", "renamed.txt")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(ws, "d", "x.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, "d"), filepath.Join(ws, "e")); err != nil {
		t.Fatal(err)
	}
	waitOpenFiles(t, srv, ws, "c.txt", "renamed.txt")
	write(t, filepath.Join(ws, "e", "y.txt"), "y") // the moved folder is watched under its new name
	waitOpenFiles(t, srv, ws, "e/y.txt", "c.txt", "renamed.txt")
	if err := os.RemoveAll(filepath.Join(ws, "e")); err != nil {
		t.Fatal(err)
	}
	waitOpenFiles(t, srv, ws, "c.txt", "renamed.txt")
}

// TestSync: a file saved just before Sync is reported when Sync returns,
// long before it would have settled.
func TestSync(t *testing.T) {
	t.Parallel()
	ws := tempDir(t)
	rec := newRecorder()
	w := start(t, Options{Roots: []string{ws}, Debounce: time.Minute}, rec)
	path := filepath.Join(ws, "just-saved.txt")
	write(t, path, "x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.snapshot(); !slices.Contains(got, "focus "+path) {
		t.Fatalf("after Sync: %q", got)
	}
}
