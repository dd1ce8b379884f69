package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// A server (StartServer) speaks on its pipes for as long as it runs, not
// as long as the start's context: it reads the workspace, writes its
// cache and nothing else, never reads a closed folder or the home, and
// Kill ends it. With namespaces and without.
func TestServerStdioAndCache(t *testing.T) {
	for _, l := range []*Launcher{{}, {NoNamespaces: true}} {
		t.Run(fmt.Sprintf("namespaces=%v", !l.NoNamespaces), func(t *testing.T) {
			w := newWorld(t)
			cache := filepath.Join(w.root, "cache")
			if err := os.Mkdir(cache, 0o755); err != nil {
				t.Fatal(err)
			}
			p := w.policy(permission.AccessWorkspace, permission.AccessNone)
			p.Caches = []string{cache}
			script := `echo "workspace: $(cat input.txt)"
echo pwned > ` + filepath.Join(w.home, "notes.txt") + ` 2>/dev/null && echo "wrote home"
cat ` + filepath.Join(w.home, ".ssh", "id_rsa") + ` ` + filepath.Join(w.home, ".gemini", "oauth_creds.json") + ` 2>/dev/null
echo ready
while read line; do echo "$line" >> ` + filepath.Join(cache, "log") + `; echo "got $line"; done`
			ctx, cancel := context.WithCancel(context.Background())
			srv, err := l.StartServer(ctx, &Command{Policy: p, Path: "/bin/sh", Args: []string{"-c", script},
				Env: []string{"PATH=/usr/bin:/bin"}, Dir: w.ws})
			if err != nil {
				t.Fatal(err)
			}
			if srv.Enforcement.MemoryBytes != DefaultServerMemoryBytes {
				t.Errorf("a server's memory bound is %d, want %d", srv.Enforcement.MemoryBytes, uint64(DefaultServerMemoryBytes))
			}
			// The start's context ends; the server does not.
			cancel()
			out := bufio.NewReader(srv.Stdout)
			var seen []string
			for {
				line, err := out.ReadString('\n')
				if err != nil {
					t.Fatalf("the server ended early: %v; said %q", err, seen)
				}
				seen = append(seen, strings.TrimSpace(line))
				if strings.TrimSpace(line) == "ready" {
					break
				}
			}
			said := strings.Join(seen, "\n")
			if !strings.Contains(said, "workspace: workspace input") || strings.Contains(said, "wrote home") || strings.Contains(said, w.secret) {
				t.Fatalf("the server said:\n%s", said)
			}
			// A sleep: a server wrongly ended with the start's context would
			// be killed by now; that it still answers is what is checked,
			// which no event can say.
			time.Sleep(100 * time.Millisecond)
			fmt.Fprintln(srv.Stdin, "hello")
			if line, err := out.ReadString('\n'); err != nil || line != "got hello\n" {
				t.Fatalf("answer %q, %v", line, err)
			}
			if b, err := os.ReadFile(filepath.Join(cache, "log")); err != nil || string(b) != "hello\n" {
				t.Fatalf("the cache holds %q, %v", b, err)
			}
			assertUnchanged(t, filepath.Join(w.home, "notes.txt"), "home notes")
			srv.Kill()
			if err := srv.Wait(); err == nil {
				t.Fatal("a killed server exited 0")
			}
			if err := srv.Wait(); err == nil {
				t.Fatal("a second Wait forgot the first's error")
			}
		})
	}
}

// A cache that holds or lies in a closed folder, or overlaps the
// program's own folder, is refused before anything starts.
func TestServerCacheRefused(t *testing.T) {
	w := newWorld(t)
	inClosed := filepath.Join(w.home, ".gemini", "gemkit")
	for name, cache := range map[string]string{"in a closed folder": inClosed, "holding a closed folder": w.home, "the program's own folder": w.ext} {
		p := w.policy(permission.AccessWorkspace, permission.AccessNone)
		p.Caches = []string{cache}
		srv, err := (&Launcher{}).StartServer(context.Background(), &Command{Policy: p, Path: "/bin/true", Dir: w.ws})
		if err == nil {
			srv.Kill()
			srv.Wait()
			t.Errorf("%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), "cache folder") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestServerUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestServerStdioAndCache|TestServerCacheRefused)$")
}
