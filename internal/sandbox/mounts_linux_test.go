package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// TestReadOnlyBindsSurviveRebinds: a folder between the writable
// workspace and a protected path is bound onto itself (so the protected
// path cannot be renamed away); that bind must not uncover the read-only
// binds made beneath it before. Here node_modules beside two linked
// extensions' folders that lie in the workspace is protected (Node looks
// there for what their code requires): the tool writes neither
// extension's code nor the node_modules, moves neither away, and still
// writes a file beside them. Before the binds were ordered by depth, the
// second bind of the folder made the first extension's code writable.
func TestReadOnlyBindsSurviveRebinds(t *testing.T) {
	w := newWorld(t)
	own, other := filepath.Join(w.ws, "exts", "own"), filepath.Join(w.ws, "exts", "other")
	for _, d := range []string{own, other} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "tool.sh"), []byte("echo original\n"), 0o644)
	}
	p := w.policy(permission.AccessWorkspace, permission.AccessWorkspace)
	p.ReadOnly = []string{own, other}
	p.Guarded = []permission.Guarded{{Path: filepath.Join(w.ws, "exts", "node_modules"), Dir: true}, {Path: filepath.Join(w.ws, "node_modules"), Dir: true}}
	l := &Launcher{LockDir: lockDir(t)}
	r := run(t, l, p, 20*time.Second, sh(`cd exts
for f in own/tool.sh other/tool.sh; do echo planted > $f 2>/dev/null && echo "WROTE $f"; done
mkdir -p node_modules/leftpad 2>/dev/null && echo x > node_modules/leftpad/index.js 2>/dev/null && echo "WROTE node_modules"
mv own own2 2>/dev/null && echo "MOVED own"
echo ok > beside.txt && echo LEGIT`)...)
	if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "MOVED") || !strings.Contains(r.stdout, "LEGIT") {
		t.Fatalf("%v\nstdout %q\nstderr %q", r.err, r.stdout, r.stderr)
	}
	for _, d := range []string{own, other} {
		if b, _ := os.ReadFile(filepath.Join(d, "tool.sh")); string(b) != "echo original\n" {
			t.Errorf("%s/tool.sh is %q", d, b)
		}
	}
}
