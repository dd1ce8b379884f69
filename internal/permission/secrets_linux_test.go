package permission

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestLocatorFindsServersEnvironment: a process of this user listening on
// loopback, started with its own TMPDIR, CLAUDE_CONFIG_DIR, QWEN_HOME,
// XDG_CONFIG_HOME and GEMINI_CLI_HOME, is found through the listening
// sockets, and what its environment names is closed: its discovery
// folder, both lock folders, its gemkit configuration, its .gemini; a
// process that stopped listening is forgotten.
func TestLocatorFindsServersEnvironment(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatal("no system python3 in /usr/bin: run scripts/setup-and-test, or apt-get install -y python3")
	}
	root := t.TempDir()
	d := func(n string) string { return filepath.Join(root, n) }
	cmd := exec.Command(python, "-c", `import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True)
sys.stdin.read()`)
	cmd.Env = []string{"HOME=" + d("home"), "TMPDIR=" + d("tmp"), "CLAUDE_CONFIG_DIR=" + d("claude"), "QWEN_HOME=~/qwen",
		"XDG_CONFIG_HOME=" + d("xdg"), "GEMINI_CLI_HOME=" + d("gh")}
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if !bufio.NewScanner(out).Scan() {
		t.Fatal("the listener did not start")
	}
	var l Locator
	in := ClosedInputs{Home: d("me"), RecordDirs: []string{}}
	in.Writers = l.Writers()
	closed := ClosedPaths(in)
	for _, want := range []string{d("tmp") + "/gemini/ide", d("claude") + "/ide", d("home") + "/qwen/ide", d("home") + "/.claude/ide",
		d("xdg") + "/gemkit", d("home") + "/.config/gemkit", d("gh") + "/.gemini", d("home") + "/.gemini", d("me") + "/.config/gemkit"} {
		if !slices.Contains(closed, want) {
			t.Errorf("%s is not closed: %v", want, closed)
		}
	}
	stdin.Close()
	cmd.Wait()
	// The writers are read from the system, which tells no one when a
	// server stops.
	if !gemkittest.Poll(10*time.Second, 50*time.Millisecond, func() bool {
		return !slices.ContainsFunc(l.Writers(), func(e Env) bool { return slices.Contains(e.TempDirs, d("tmp")) })
	}) {
		t.Fatal("a server that stopped is still among the writers")
	}
}

// TestRecordsCloseTheirSecrets: a record of gemkit's servers names its
// port (OwnServerPort) and its token file wherever the file is
// (ClosedPaths); a Qwen Code lock file names its port too.
func TestRecordsCloseTheirSecrets(t *testing.T) {
	root := t.TempDir()
	records := filepath.Join(root, "records")
	token := filepath.Join(root, "anywhere", "token")
	forget, err := RecordServerIn(records, 4711, []string{token})
	if err != nil {
		t.Fatal(err)
	}
	qwen := filepath.Join(root, "qwen")
	os.MkdirAll(filepath.Join(qwen, "ide"), 0o700)
	os.WriteFile(filepath.Join(qwen, "ide", "4712.lock"), []byte(`{}`), 0o600)
	in := ClosedInputs{Home: filepath.Join(root, "home"), Homes: map[string]string{"QWEN_HOME": qwen}, RecordDirs: []string{records}}
	if !slices.Contains(ClosedPaths(in), token) {
		t.Errorf("the recorded token file is not closed: %v", ClosedPaths(in))
	}
	for _, port := range []int{4711, 4712} {
		if !OwnServerPort(in, port) {
			t.Errorf("port %d not recognised", port)
		}
	}
	forget()
	if OwnServerPort(in, 4711) || slices.Contains(ClosedPaths(in), token) {
		t.Error("the record outlived the server")
	}
	os.Chmod(records, 0o755)
	if _, err := RecordServerIn(records, 4713, nil); err == nil {
		t.Error("a records folder others may enter was used")
	}
}

func TestFromSandbox(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.31.28:4000": true, "[::ffff:127.0.31.28]:4000": true, "127.0.0.1:4000": false, "[::1]:4000": false, "@": false, "": false} {
		if FromSandbox(addr) != want {
			t.Errorf("FromSandbox(%q) = %v", addr, !want)
		}
	}
}

// TestUnprivileged runs the tests that look at processes and records as
// uid 65534.
func TestUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestLocatorFindsServersEnvironment|TestRecordsCloseTheirSecrets|TestClosedPaths|TestProtectedPaths.*|TestGitPaths.*)$")
}
