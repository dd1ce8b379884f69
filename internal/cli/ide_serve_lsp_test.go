package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide/discovery"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestServeLSPEndings runs the real binary as a language server and ends
// it each way a client does: shutdown then exit (status 0), exit alone
// (status 1, as LSP says), its stdin closed with no word (status 0, a line
// on stderr). Bad input before the end is answered and logged, and the
// discovery file, written only once initialize came, is gone every time.
func TestServeLSPEndings(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
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
			cmd := exec.Command(bin, "ide", "serve", "--editor", "lsp")
			cmd.Dir = t.TempDir() // not the workspace: that comes from initialize
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+t.TempDir())
			var out, errOut gemkittest.Output
			cmd.Stdout, cmd.Stderr = &out, &errOut
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			dir := filepath.Join(tmp, "gemini", "ide")
			io.WriteString(stdin, frame(`{"jsonrpc":"2.0","id":0,"method":"textDocument/hover","params":{}}`))
			io.WriteString(stdin, "Content-Length: 3\r\n\r\nnop")
			time.Sleep(100 * time.Millisecond)
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Fatal("a discovery file before initialize")
			}
			io.WriteString(stdin, frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+ws)))
			var file string
			deadline := time.Now().Add(10 * time.Second)
			for file == "" {
				ents, _ := os.ReadDir(dir)
				for _, e := range ents {
					if pid, _, ok := discovery.ParseFileName(e.Name()); ok && pid == os.Getpid() {
						file = filepath.Join(dir, e.Name())
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no discovery file named for the client's pid; stderr: %s", errOut.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if b, _ := os.ReadFile(file); !strings.Contains(string(b), ws) {
				t.Fatalf("discovery file %s does not name the workspace %s", b, ws)
			}
			io.WriteString(stdin, tc.end)
			stdin.Close()
			err = cmd.Wait()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
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
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+t.TempDir())
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	outW.Close()
	errW.Close()
	go io.Copy(io.Discard, errR)
	io.WriteString(stdin, frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+ws)))
	buf := make([]byte, 64)
	if _, err := outR.Read(buf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "gemini", "ide")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ents, _ := os.ReadDir(dir); len(ents) == 2 { // discovery file and group socket
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no discovery file and group socket")
		}
	}
	outR.Close()
	errR.Close()
	stdin.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		t.Errorf("the server died of %v", ee.ProcessState)
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("left behind in the discovery directory: %v", ents)
	}
}

// TestServeLSPKilledAfterExit ends the server as Emacs's lsp-mode does:
// shutdown (whose answer it waits for), exit, and at once SIGKILL
// (kill-process). The discovery file and Claude Code's lock file must be
// gone by the time shutdown is answered.
func TestServeLSPKilledAfterExit(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	tmp, ws, claudeDir := t.TempDir(), t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "ide", "serve", "--editor", "lsp")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+claudeDir)
	var out, errOut gemkittest.Output
	cmd.Stdout, cmd.Stderr = &out, &errOut
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s; stderr: %s", what, errOut.String())
			}
		}
	}
	io.WriteString(stdin, frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+ws)))
	dir := filepath.Join(tmp, "gemini", "ide")
	var file string
	waitFor("discovery file", func() bool {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if pid, _, ok := discovery.ParseFileName(e.Name()); ok && pid == os.Getpid() {
				file = filepath.Join(dir, e.Name())
			}
		}
		return file != ""
	})
	locks := func() []string { m, _ := filepath.Glob(filepath.Join(claudeDir, "ide", "*.lock")); return m }
	waitFor("Claude Code lock file", func() bool { return len(locks()) == 1 })

	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`))
	waitFor("answer to shutdown", func() bool { return strings.Contains(out.String(), `"id":2`) })
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Error("the discovery file is still there when shutdown is answered")
	}
	if l := locks(); len(l) > 0 {
		t.Errorf("Claude Code's lock file is still there when shutdown is answered: %v", l)
	}
	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","method":"exit"}`))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Error("discovery file left behind")
	}
}

// TestServeLSPShutdownThenExit: after shutdown has stopped the companion,
// the server waits for exit and then ends with status 0.
func TestServeLSPShutdownThenExit(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	tmp, ws := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "ide", "serve", "--editor", "lsp")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+t.TempDir())
	var out, errOut gemkittest.Output
	cmd.Stdout, cmd.Stderr = &out, &errOut
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	io.WriteString(stdin, frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":%d,"rootUri":%q,"capabilities":{}}}`, os.Getpid(), "file://"+ws)))
	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`))
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), `"id":2`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer to shutdown; stderr: %s", errOut.String())
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("the server ended (%v) before exit; stderr: %s", err, errOut.String())
	case <-time.After(300 * time.Millisecond):
	}
	io.WriteString(stdin, frame(`{"jsonrpc":"2.0","method":"exit"}`))
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit status: %v; stderr: %s", err, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not end on exit")
	}
}
