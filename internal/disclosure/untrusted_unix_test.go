//go:build unix

package disclosure

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestDocsAndSkillsThroughLinks: a doc or a skill's SKILL.md that becomes,
// after the set was loaded, a link out of the extension (absolute,
// climbing, in a middle component, through /proc), a FIFO or a folder is
// refused to the model in words, without blocking and without reading
// what the link names.
func TestDocsAndSkillsThroughLinks(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "rules.md")
	os.WriteFile(secret, []byte("the-users-own-key\n"), 0o644)
	os.WriteFile(filepath.Join(secretDir, "SKILL.md"), []byte("---\nname: code-review\ndescription: d\n---\nthe-users-own-key\n"), 0o644)
	forms := map[string]func(p string){
		"absolute":  func(p string) { os.Symlink(secret, p) },
		"climb":     func(p string) { os.Symlink(strings.Repeat("../", 30)+strings.TrimPrefix(secret, "/"), p) },
		"proc-root": func(p string) { os.Symlink("/proc/self/root"+secret, p) },
		"proc-fd":   func(p string) { os.Symlink("/proc/self/fd/0", p) },
		"fifo":      func(p string) { syscall.Mkfifo(p, 0o644) },
		"folder":    func(p string) { os.Mkdir(p, 0o755) },
		"middle": func(p string) {
			d := filepath.Dir(p)
			os.RemoveAll(d)
			os.Symlink(secretDir, d)
		},
	}
	for name, plant := range forms {
		t.Run(name, func(t *testing.T) {
			home := t.TempDir()
			ws := filepath.Join(home, "ws")
			os.MkdirAll(ws, 0o755)
			writeExt(t, home, analyzer, copyFiles(analyzerFiles))
			writeExt(t, home, reviewer, copyFiles(reviewerFiles))
			st := extension.OpenStore(home).WithWorkspace(ws)
			set, err := Load(st)
			if err != nil {
				t.Fatal(err)
			}
			docPath := filepath.Join(home, ".gemini", "extensions", "code-analyzer", "docs", "rules.md")
			skillPath := filepath.Join(home, ".gemini", "extensions", "reviewer", "skills", "code-review", "SKILL.md")
			for _, p := range []string{docPath, skillPath} {
				os.Remove(p)
				plant(p)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, c := range [][2]string{{"code-analyzer", "linter-rules"}, {"reviewer", SkillPrefix + "code-review"}} {
					d, err := set.ReadDoc(c[0], c[1])
					if err == nil || (d != nil && strings.Contains(d.Text, "the-users-own-key")) || strings.Contains(err.Error(), "the-users-own-key") {
						t.Errorf("read_doc %s %s = %+v, %v: want a refusal", c[0], c[1], d, err)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("read_doc blocked")
			}
		})
	}
}

func TestDocsAndSkillsUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestDocsAndSkillsThroughLinks$")
}
