package extmcp_test

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// TestRuntimeFoldersClosed: gemkit's runtime folders (the code-
// intelligence brokers' sockets and logs, the hooks' warm servers'
// sockets: $XDG_RUNTIME_DIR/gemkit, and gemkit-UID in the temporary
// folders) are closed to an extension's server as to every tool and
// hook, whatever it is allowed: it can neither list them, read a file
// there, nor connect to a socket there, even allowed to write the
// workspace that holds them.
func TestRuntimeFoldersClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server of its own: runs without -short, as in CI")
	}
	s := newSetup(t, 30*time.Second)
	runtimeDir := filepath.Join(s.ws, "run")
	tmpDir := filepath.Join(s.ws, "tmp")
	var files, socks []string
	for _, d := range []string{filepath.Join(runtimeDir, "gemkit"), filepath.Join(tmpDir, "gemkit-"+strconv.Itoa(os.Getuid()))} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(d, "broker.log")
		if err := os.WriteFile(f, []byte("a broker's log\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		sock := filepath.Join(d, "hook-key.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		socks = append(socks, sock)
	}
	s.m.Close()
	m := extmcp.NewManager(extmcp.Config{
		Launcher: &sandbox.Launcher{}, Workspace: s.ws, Timeout: 30 * time.Second,
		Environ: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, "XDG_RUNTIME_DIR=" + runtimeDir, "TMPDIR=" + tmpDir},
		Logger:  slog.New(slog.NewTextHandler(&gemkittest.Output{}, nil)),
	})
	defer m.Close()
	fx := s.spec("fixture", filepath.Join(s.ext, "fixture.mjs"))
	fx.Widening = extension.Widening{Write: extension.AccessWorkspace}
	m.Sync([]extmcp.Spec{fx})

	for _, f := range files {
		text, isErr, err := call(t, m, fx, "read", map[string]any{"path": f})
		if err != nil || !isErr || strings.Contains(text, "a broker's log") {
			t.Errorf("reading %s: %q %v %v, want a refusal", f, text, isErr, err)
		}
		text, _, err = call(t, m, fx, "run", map[string]any{"cmd": "ls", "args": []string{"-la", filepath.Dir(f)}})
		if err != nil || strings.Contains(text, "broker.log") {
			t.Errorf("listing %s: %q %v, want a refusal", filepath.Dir(f), text, err)
		}
	}
	for _, sock := range socks {
		script := "require('net').connect(" + jsString(sock) + ").on('connect',()=>{console.log('connected');process.exit(0)}).on('error',e=>{console.log(String(e));process.exit(1)})"
		text, _, err := call(t, m, fx, "run", map[string]any{"cmd": "node", "args": []string{"-e", script}})
		if err != nil || strings.Contains(text, "connected") {
			t.Errorf("connecting to %s: %q %v, want a refusal", sock, text, err)
		}
	}
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }
