package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// vanishLayout is the folders of one case of TestClosedFolderVanishes:
// other processes' TMPDIRs, a closed folder in the first, and a folder
// beside it.
type vanishLayout struct {
	w            *world
	tmp1, tmp2   string // two other processes' TMPDIRs
	closed1, sib string
}

// vanishChanges are what TestClosedFolderVanishes changes between the
// sandbox's plan and its start, one class of change each.
var vanishChanges = []struct {
	name   string
	change func(t *testing.T, l vanishLayout)
}{
	{"the closed folder removed", func(t *testing.T, l vanishLayout) { removeAll(t, l.closed1) }},
	{"its TMPDIR removed", func(t *testing.T, l vanishLayout) { removeAll(t, l.tmp1) }},
	{"every TMPDIR's parent removed", func(t *testing.T, l vanishLayout) { removeAll(t, filepath.Dir(l.tmp1)) }},
	{"a folder beside it removed", func(t *testing.T, l vanishLayout) { removeAll(t, l.sib) }},
	{"a file beside it removed", func(t *testing.T, l vanishLayout) { removeAll(t, filepath.Join(l.tmp1, "gemini", "notes")) }},
	{"a folder beside it replaced by a link", func(t *testing.T, l vanishLayout) {
		removeAll(t, l.sib)
		symlink(t, filepath.Join(l.tmp2, "gemini", "ide"), l.sib)
	}},
	{"a folder beside it replaced by a file", func(t *testing.T, l vanishLayout) {
		removeAll(t, l.sib)
		writeFile(t, l.sib, "a file now")
	}},
	{"a file beside it replaced by a folder", func(t *testing.T, l vanishLayout) {
		notes := filepath.Join(l.tmp1, "gemini", "notes")
		removeAll(t, notes)
		if err := os.Mkdir(notes, 0o755); err != nil {
			t.Fatal(err)
		}
	}},
	{"its TMPDIR replaced by a file", func(t *testing.T, l vanishLayout) {
		removeAll(t, l.tmp1)
		writeFile(t, l.tmp1, "a file now")
	}},
	{"the closed folder made again", func(t *testing.T, l vanishLayout) {
		removeAll(t, l.tmp1)
		if err := os.MkdirAll(l.closed1, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(l.closed1, "token"), "TOKEN-AGAIN")
	}},
	{"another extension's folder in the scope removed", func(t *testing.T, l vanishLayout) {
		removeAll(t, filepath.Join(l.w.ws, "linked-ext"))
	}},
}

// TestClosedFolderVanishes: another process's temporary folder holds a
// closed place (its TMPDIR's gemini/ide, which permission's Locator
// finds in the environment of a server listening on loopback), and it
// changes between the sandbox's plan and the child's build: the test's
// hook runs after the rules and the mount steps are planned and before
// the child starts. Whatever changed, the sandbox starts and the tool
// runs: a closed folder that is gone has nothing left to hide, and a
// path of the scope that went is left out. Nothing is given away either:
// a folder of the scope replaced by a link to another closed folder
// shows nothing of it, a closed folder made again with a secret in it stays closed,
// and another process's closed folder that stayed stays closed. Each
// scope that splits around a closed folder (full, home, workspace, and
// read full with write workspace), with namespaces and without.
func TestClosedFolderVanishes(t *testing.T) {
	t.Parallel()
	classes := vanishChanges
	scopes := []struct {
		name        string
		read, write permission.Access
		under       func(w *world) string
	}{
		{"full", permission.AccessFull, permission.AccessFull, func(w *world) string { return w.root }},
		{"home", permission.AccessHome, permission.AccessHome, func(w *world) string { return w.home }},
		{"workspace", permission.AccessWorkspace, permission.AccessWorkspace, func(w *world) string { return w.ws }},
		{"read full, write workspace", permission.AccessFull, permission.AccessWorkspace, func(w *world) string { return w.ws }},
	}
	for _, m := range modes {
		for _, sc := range scopes {
			for _, c := range classes {
				t.Run(m.name+"/"+sc.name+"/"+c.name, func(t *testing.T) {
					w := newWorld(t)
					others := filepath.Join(sc.under(w), "others")
					l := vanishLayout{w: w, tmp1: filepath.Join(others, "tmp1"), tmp2: filepath.Join(others, "tmp2")}
					l.closed1, l.sib = filepath.Join(l.tmp1, "gemini", "ide"), filepath.Join(l.tmp1, "sib")
					closed2 := filepath.Join(l.tmp2, "gemini", "ide")
					for _, d := range []string{l.closed1, closed2, filepath.Join(l.sib, "x"), filepath.Join(w.ws, "linked-ext")} {
						if err := os.MkdirAll(d, 0o755); err != nil {
							t.Fatal(err)
						}
					}
					writeFile(t, filepath.Join(l.closed1, "token"), "TOKEN-ONE")
					writeFile(t, filepath.Join(closed2, "token"), "TOKEN-TWO")
					writeFile(t, filepath.Join(l.tmp1, "gemini", "notes"), "notes")
					p := w.policy(sc.read, sc.write)
					p.Protected = append(p.Protected, l.closed1, closed2)
					p.ReadOnly = []string{filepath.Join(w.ws, "linked-ext")}
					changed := false
					launcher := &Launcher{NoNamespaces: m.l.NoNamespaces, planned: func() {
						if !changed {
							changed = true
							c.change(t, l)
						}
					}}
					script := "cat " + strings.Join([]string{
						filepath.Join(l.closed1, "token"), filepath.Join(closed2, "token"),
						filepath.Join(l.sib, "token"),
					}, " ") + " 2>/dev/null; echo ran"
					r := run(t, launcher, p, 20*time.Second, sh(script)...)
					if !changed {
						t.Fatal("the hook between the plan and the start did not run")
					}
					if r.proc == nil {
						t.Fatalf("the sandbox did not start: %v", r.err)
					}
					if !strings.Contains(r.stdout, "ran") {
						t.Fatalf("the tool did not run: %v: %q %q", r.err, r.stdout, r.stderr)
					}
					for _, s := range []string{"TOKEN-ONE", "TOKEN-AGAIN", "TOKEN-TWO"} {
						if strings.Contains(r.stdout, s) {
							t.Errorf("the tool read %s: %q", s, r.stdout)
						}
					}
				})
			}
		}
	}
}

func TestClosedFolderVanishesUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestClosedFolderVanishes$")
}

func removeAll(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
