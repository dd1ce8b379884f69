package sandbox

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/lspbroker"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestBrokerFolderClosed: a tool that may read and write everything
// (read: full, write: full) can neither list, read nor change gemkit's
// runtime folder (the brokers' sockets, locks and logs) when it is
// closed as gemkit's tool runner closes it (lspbroker.Dirs among
// Protected): it cannot link the next broker's log to ~/.bashrc. The
// runtime folder is one the tool could otherwise write, as
// /run/user/UID is (the shared /tmp is not writable to tools anyway).
// The control: the same tool writes ~/.bashrc itself.
func TestBrokerFolderClosed(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			w := newWorld(t)
			rt := filepath.Join(w.home, "run")
			if err := os.Mkdir(rt, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Setenv("XDG_RUNTIME_DIR", rt)
			dir, err := gemkitdir.MakeRuntime()
			if err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, "codeintel-sandbox-test.log")
			if err := os.WriteFile(log, []byte("broker log\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			rc := filepath.Join(w.home, ".bashrc")
			os.WriteFile(rc, []byte("# the person's own\n"), 0o644)
			p := w.policy(permission.AccessFull, permission.AccessFull)
			p.Protected = append(p.Protected, lspbroker.Dirs(nil, nil)...)
			planted := filepath.Join(dir, "codeintel-planted.log")
			attempts := map[string]string{
				"link the log":         "ln -sf " + rc + " " + planted,
				"replace the log":      "ln -sf " + rc + " " + log,
				"write the log":        "echo pwned > " + log,
				"read the log":         "cat " + log,
				"move the folder":      "mv " + dir + " " + dir + ".moved",
				"create in the folder": "mkdir -p " + filepath.Join(dir, "sub"),
			}
			if !m.l.NoNamespaces {
				// Without namespaces a full tool may list the names in
				// a closed folder, never read them (docs/sandbox.md,
				// "What is not protected").
				attempts["list the folder"] = "ls " + dir
			}
			for name, script := range attempts {
				t.Run(name, func(t *testing.T) {
					runRefused(t, m.l, p, []string{"broker log"}, sh(script)...)
					if _, err := os.Lstat(planted); err == nil {
						t.Fatal("the tool planted a file in the broker folder")
					}
					if _, err := os.Lstat(filepath.Join(dir, "sub")); err == nil {
						t.Fatal("the tool made a folder in the broker folder")
					}
					if fi, err := os.Lstat(log); err != nil || !fi.Mode().IsRegular() {
						t.Fatalf("the broker's log changed: %v %v", fi, err)
					}
					assertUnchanged(t, log, "broker log\n")
				})
			}
			r := run(t, m.l, p, 20*time.Second, sh("echo ok >> "+rc)...)
			if r.err != nil {
				t.Fatalf("control: the tool could not write its scope: %v %s", r.err, r.stderr)
			}
		})
	}
}

func TestBrokerFolderClosedUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^TestBrokerFolderClosed$")
}
