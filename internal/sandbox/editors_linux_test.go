package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// editorSettings are the workspace files of the editors gemkit serves or
// documents that run code or choose programs (docs/sandbox.md, "Protected
// paths", gives each one's source).
var editorSettings = []string{".dir-locals.el", ".dir-locals-2.el", ".nvim.lua", ".nvimrc", ".exrc", ".helix/languages.toml", ".zed/settings.json", ".kakrc"}

// TestEditorSettingsProtected: a write: workspace tool can neither create
// nor change the editors' workspace settings that run code (Emacs's
// .dir-locals.el, where eglot takes a gopls env that names a compiler;
// Neovim's exrc files; Helix's and Zed's folders, which name language
// server commands; Kakoune's .kakrc; a Sublime project), nor create a new
// *.sublime-project: the run is stopped and what it made is moved aside.
// A plain file next to them is still written. Before, each was written.
func TestEditorSettingsProtected(t *testing.T) {
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) {
			w := newWorld(t)
			if existing {
				for _, f := range append(editorSettings, "app.sublime-project") {
					path := filepath.Join(w.ws, f)
					os.MkdirAll(filepath.Dir(path), 0o755)
					if err := os.WriteFile(path, []byte("user's\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
			p.Guarded = permission.ProtectedPaths(permission.GuardInputs{Write: p.Write, Workspace: w.ws, Home: w.home})
			files := editorSettings
			if existing {
				files = append(files, "app.sublime-project")
			}
			var script strings.Builder
			for _, f := range files {
				fmt.Fprintf(&script, "mkdir -p %q 2>/dev/null; echo '(tool)' > %q 2>/dev/null && echo WROTE %s\n", filepath.Dir(f), f, f)
			}
			script.WriteString("echo ok > plain.txt && echo LEGIT\n")
			l := &Launcher{LockDir: lockDir(t)}
			r := run(t, l, p, 20*time.Second, sh(script.String())...)
			if !strings.Contains(r.stdout, "LEGIT") || strings.Contains(r.stdout, "WROTE") {
				t.Fatalf("%v\n%s\n%s", r.err, r.stdout, r.stderr)
			}
			for _, f := range append(editorSettings, "app.sublime-project") {
				b, err := os.ReadFile(filepath.Join(w.ws, f))
				switch {
				case existing && string(b) != "user's\n":
					t.Errorf("%s changed: %q %v", f, b, err)
				case !existing && err == nil:
					t.Errorf("%s created: %q", f, b)
				}
			}

			// A new name the pattern matches: the tool is stopped, and
			// what it made is moved aside where no editor loads it.
			r = run(t, l, p, 20*time.Second, sh(`echo '{"build_systems":[{"shell_cmd":"id"}]}' > new.sublime-project; sleep 5; echo SURVIVED`)...)
			var pe *ProtectedNameError
			if !errors.As(r.err, &pe) || strings.Contains(r.stdout, "SURVIVED") {
				t.Fatalf("creating new.sublime-project: %v %q", r.err, r.stdout)
			}
			if _, err := os.Lstat(filepath.Join(w.ws, "new.sublime-project")); err == nil {
				t.Error("new.sublime-project stayed where Sublime Text opens it")
			}
			// Stopped at the name's creation: what it holds may be cut short.
			if _, err := os.Lstat(filepath.Join(w.ws, "new.sublime-project"+MovedSuffix)); err != nil || pe.Moved == "" {
				t.Errorf("what the tool made was not kept aside: %v (%v)", err, pe)
			}

			// Many names at once, one renamed: none stays where Sublime
			// Text would open it, the person's own excepted.
			r = run(t, l, p, 20*time.Second, sh(`for i in $(seq 1 200); do : > d$i.sublime-project; done; mv d1.sublime-project e.sublime-project; sleep 5`)...)
			if !errors.As(r.err, &pe) {
				t.Fatalf("creating many: %v", r.err)
			}
			left, _ := filepath.Glob(filepath.Join(w.ws, "*.sublime-project"))
			if want := map[bool]int{false: 0, true: 1}[existing]; len(left) != want {
				t.Errorf("left where Sublime Text opens them: %v", left)
			}
			if !strings.Contains(pe.Error(), "editor settings") {
				t.Errorf("the error does not say why: %v", pe)
			}
		})
	}
}
