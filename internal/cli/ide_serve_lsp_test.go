package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestServeLSPEndings runs `gemkit ide serve --editor lsp` in this
// process as a language server and ends it each way a client does:
// shutdown then exit (status 0), exit alone (status 1, as LSP says), its
// stdin closed with no word (status 0, a line on stderr). Bad input before
// the end is answered and logged, where it serves goes to the client's
// log (window/logMessage) and not to stderr, and the discovery file,
// written only once initialize came, is gone every time.
func TestServeLSPEndings(t *testing.T) {
	t.Parallel()
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	cases := []struct {
		name, end string
		code      int
		stderr    string
	}{
		{"shutdown and exit", frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`) + frame(`{"jsonrpc":"2.0","method":"exit"}`), 0, ""},
		{"exit alone", frame(`{"jsonrpc":"2.0","method":"exit"}`), 1, "exit without shutdown"},
		{"stdin closed", "", 0, "closed its stream without shutdown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tmp, ws := t.TempDir(), t.TempDir()
			env := newIDEClientEnv(tmp, t.TempDir()) // not the workspace: that comes from initialize
			stdin, in := io.Pipe()
			var out, errOut gemkittest.Output
			exited := make(chan int, 1)
			go func() {
				exited <- run(context.Background(), []string{"ide", "serve", "--editor", "lsp"}, env.app(Streams{In: stdin, Out: &out, Err: &errOut}))
			}()
			defer in.Close()
			dir := filepath.Join(tmp, "gemini", "ide")
			io.WriteString(in, frame(`{"jsonrpc":"2.0","id":0,"method":"textDocument/hover","params":{}}`))
			io.WriteString(in, "Content-Length: 3\r\n\r\nnop")
			// Both are answered, in order, before initialize is sent.
			out.WaitFor(t, "the answers before initialize", func(o string) bool {
				return strings.Contains(o, `"code":-32002`) && strings.Contains(o, `"code":-32700`)
			})
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Fatal("a discovery file before initialize")
			}
			io.WriteString(in, frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+ws)))
			// initialize is answered once the companion serves.
			out.WaitFor(t, "the answer to initialize", func(o string) bool { return strings.Contains(o, `"serverInfo"`) })
			var file string
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if pid, _, ok := discovery.ParseFileName(e.Name()); ok && pid == os.Getpid() {
					file = filepath.Join(dir, e.Name())
				}
			}
			if file == "" {
				t.Fatalf("no discovery file named for the client's pid; stderr: %s", errOut.String())
			}
			if b, _ := os.ReadFile(file); !strings.Contains(string(b), ws) {
				t.Fatalf("discovery file %s does not name the workspace %s", b, ws)
			}
			io.WriteString(in, tc.end)
			in.Close()
			var code int
			select {
			case code = <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("the server did not end; stderr: %s", errOut.String())
			}
			if code != tc.code {
				t.Fatalf("exit status %d, want %d; stderr: %s", code, tc.code, errOut.String())
			}
			if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("discovery file left behind")
			}
			for _, want := range []string{`"code":-32002`, `"code":-32700`} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout %q lacks %s", out.String(), want)
				}
			}
			// Where it serves goes to the client's log, not to stderr,
			// which clients log as errors.
			for _, want := range []string{`"method":"window/logMessage"`, "gemkit: IDE companion serving http://127.0.0.1:", "gemkit: Claude Code endpoint ws://127.0.0.1:"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout %q lacks %s", out.String(), want)
				}
			}
			if strings.Contains(errOut.String(), "IDE companion serving") || strings.Contains(errOut.String(), "Claude Code endpoint") {
				t.Errorf("stderr %q says where the companion serves", errOut.String())
			}
			for _, want := range []string{"send initialize first", "Parse error", tc.stderr} {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr %q lacks %q", errOut.String(), want)
				}
			}
		})
	}
}

// TestServeLSPEditorKilled: the editor is killed (kill -9): its ends of
// the server's stdin, stdout and stderr pipes all close at once. The
// server's last words (the log line saying the client went) hit a closed
// stderr; it must still remove its discovery file and group socket, not
// die of SIGPIPE.
func TestServeLSPEditorKilled(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	tmp, ws := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "ide", "serve", "--editor", "lsp")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+t.TempDir(), "QWEN_HOME="+t.TempDir())
	stdin, outR, errR := startAsEditorsChild(t, cmd)
	go io.Copy(io.Discard, errR)
	io.WriteString(stdin, frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+ws)))
	buf := make([]byte, 64)
	if _, err := outR.Read(buf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "gemini", "ide")
	// The real gemkit process makes its files on its own time.
	if !gemkittest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		ents, _ := os.ReadDir(dir)
		return len(ents) == 2 // discovery file and group socket
	}) {
		t.Fatal("no discovery file and group socket")
	}
	outR.Close()
	errR.Close()
	stdin.Close()
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		t.Errorf("the server died of %v", ee.ProcessState)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("left behind in the discovery directory: %v", ents)
	}
}

// startAsEditorsChild starts cmd with its stdin, stdout and stderr
// pipes of which the test holds the other ends, as an editor does: they
// close when the test closes them, not when cmd's are gone. cmd is
// killed at the test's end.
func startAsEditorsChild(t *testing.T, cmd *exec.Cmd) (stdin io.WriteCloser, stdout, stderr *os.File) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	outW.Close()
	errW.Close()
	return stdin, outR, errR
}

// TestServeLSPKilledAfterExit ends the server as Emacs's lsp-mode does:
// shutdown (whose answer it waits for), exit, and at once SIGKILL
// (kill-process). The discovery file and Claude Code's lock file must be
// gone by the time shutdown is answered.
func TestServeLSPKilledAfterExit(t *testing.T) {
	t.Parallel()
	claudeDir := t.TempDir()
	p := startServeLSP(t, claudeDir)
	file := p.initialize(t)
	locks := func() []string { m, _ := filepath.Glob(filepath.Join(claudeDir, "ide", "*.lock")); return m }
	p.waitFor(t, "Claude Code lock file", func() bool { return len(locks()) == 1 })

	p.send(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	p.waitFor(t, "answer to shutdown", func() bool { return strings.Contains(p.out.String(), `"id":2`) })
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Error("the discovery file is still there when shutdown is answered")
	}
	if l := locks(); len(l) > 0 {
		t.Errorf("Claude Code's lock file is still there when shutdown is answered: %v", l)
	}
	p.send(`{"jsonrpc":"2.0","method":"exit"}`)
	_ = p.cmd.Process.Kill()
	<-p.exited
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Error("discovery file left behind")
	}
}

// TestServeLSPShutdownThenExit: after shutdown has stopped the companion,
// the server waits for exit and then ends with status 0.
func TestServeLSPShutdownThenExit(t *testing.T) {
	t.Parallel()
	p := startServeLSP(t, t.TempDir())
	p.initialize(t)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	p.waitFor(t, "answer to shutdown", func() bool { return strings.Contains(p.out.String(), `"id":2`) })
	select {
	case err := <-p.exited:
		t.Fatalf("the server ended (%v) before exit; stderr: %s", err, p.errOut.String())
	case <-time.After(300 * time.Millisecond):
	}
	p.send(`{"jsonrpc":"2.0","method":"exit"}`)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit status: %v; stderr: %s", err, p.errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end on exit")
	}
}

// serveLSP is a `gemkit ide serve --editor lsp` process with this test as
// its language client, talking over its stdin and stdout.
type serveLSP struct {
	cmd         *exec.Cmd
	stdin       io.WriteCloser
	out, errOut gemkittest.Output
	tmp, ws     string
	exited      chan error
}

// startServeLSP starts the server with a private TMPDIR (its discovery
// files) and claudeDir as CLAUDE_CONFIG_DIR (its lock files).
func startServeLSP(t *testing.T, claudeDir string) *serveLSP {
	t.Helper()
	p := &serveLSP{tmp: t.TempDir(), ws: t.TempDir(), exited: make(chan error, 1)}
	p.cmd = exec.Command(gemkittest.Gemkit(t), "ide", "serve", "--editor", "lsp")
	p.cmd.Dir = t.TempDir() // not the workspace: that comes from initialize
	p.cmd.Env = append(os.Environ(), "TMPDIR="+p.tmp, "CLAUDE_CONFIG_DIR="+claudeDir, "QWEN_HOME="+filepath.Join(p.tmp, "qwen"))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errOut
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// send writes one framed message.
func (p *serveLSP) send(body string) {
	_, _ = fmt.Fprintf(p.stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
}

// initialize sends initialize for p's workspace, this process as the
// editor, and returns the discovery file named for it once it is there.
func (p *serveLSP) initialize(t *testing.T) string {
	t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+p.ws))
	dir := filepath.Join(p.tmp, "gemini", "ide")
	var file string
	p.waitFor(t, "discovery file named for the client's pid", func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if pid, _, ok := discovery.ParseFileName(e.Name()); ok && pid == os.Getpid() {
				file = filepath.Join(dir, e.Name())
			}
		}
		return file != ""
	})
	return file
}

// waitFor waits up to 10 s for cond.
func (p *serveLSP) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// cond reads what the real gemkit process did, which has no event to
	// wait on.
	if !gemkittest.Poll(10*time.Second, 10*time.Millisecond, cond) {
		t.Fatalf("no %s; stderr: %s", what, p.errOut.String())
	}
}

// TestServeStdioEditorGone: an editor plugin's gemkit (--editor stdio)
// whose editor is gone, its ends of stdin, stdout and stderr closed at
// once (Vim's stop after its 2 s wait: SIGTERM, then Vim exits), must
// remove its discovery file and Qwen Code's lock file, not die of
// SIGPIPE at its last log line. CI saw TestVim (editors) wait 60 s for
// the files after Vim quit, once, under load.
func TestServeStdioEditorGone(t *testing.T) {
	t.Parallel()
	for _, stop := range []string{"stdin closed", "SIGTERM"} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			bin := gemkittest.Gemkit(t)
			tmp, ws, qwen := t.TempDir(), t.TempDir(), t.TempDir()
			cmd := exec.Command(bin, "ide", "serve", "--editor", "stdio", "--workspace", ws, "--ide-pid", strconv.Itoa(os.Getpid()), "--verbose")
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+t.TempDir(), "QWEN_HOME="+qwen)
			stdin, outR, errR := startAsEditorsChild(t, cmd)
			dir := filepath.Join(tmp, "gemini", "ide")
			files := func() []string {
				m, _ := filepath.Glob(filepath.Join(dir, "gemini-ide-server-*.json"))
				q, _ := filepath.Glob(filepath.Join(qwen, "ide", "*.lock"))
				return append(m, q...)
			}
			// The real gemkit process makes its files on its own time.
			if !gemkittest.Poll(10*time.Second, 10*time.Millisecond, func() bool { return len(files()) == 2 }) {
				t.Fatalf("no discovery file and Qwen Code lock file: %v", files())
			}
			outR.Close()
			errR.Close()
			if stop == "SIGTERM" {
				cmd.Process.Signal(syscall.SIGTERM)
			}
			stdin.Close()
			err := cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) && !ee.Exited() && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGPIPE {
				t.Errorf("gemkit died of %v", ee.ProcessState)
			}
			if left := files(); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestPeerGoneNotInherited: with SIGPIPE caught (ignorePeerGone), the
// programs gemkit starts get it at its default, not ignored: a tool's
// `cat big | head -1` ends as in a terminal.
func TestPeerGoneNotInherited(t *testing.T) {
	ignorePeerGone()
	out, err := exec.Command("sh", "-c", "grep '^SigIgn:' /proc/self/status").Output()
	if err != nil {
		t.Skipf("no /proc/self/status here (%v); Linux, where CI runs, has it", err)
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(out), "SigIgn:")), 16, 64)
	if err != nil {
		t.Fatalf("SigIgn %q: %v", out, err)
	}
	if mask&(1<<(uint(syscall.SIGPIPE)-1)) != 0 {
		t.Errorf("a child of gemkit ignores SIGPIPE (SigIgn %s)", strings.TrimSpace(string(out)))
	}
}
