package editors_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestRealGeminiClient connects the REAL Gemini CLI client code
// (IdeClient of @google/gemini-cli-core, run by Node from interop/) to
// each editor, with the variables the editor exports to its terminals, as
// a `gemini` started in the editor's terminal would: it sees the file and
// cursor, and its openDiff resolves with what the person did in the
// editor.
func TestRealGeminiClient(t *testing.T) {
	t.Parallel()
	editors := []struct {
		name, display string
		start         func(t *testing.T, h *harness) driver
	}{
		{"neovim", "Neovim", func(t *testing.T, h *harness) driver {
			return startNvim(t, h, requireEditor(t, "nvim", "neovim"), gemkittest.Gemkit(t))
		}},
		{"vim", "Vim", func(t *testing.T, h *harness) driver {
			return startVim(t, h, requireEditor(t, "vim", "vim-nox"), requireEditor(t, "tmux", "tmux"), gemkittest.Gemkit(t))
		}},
		{"emacs", "Emacs", func(t *testing.T, h *harness) driver {
			return startEmacs(t, h, requireEditor(t, "emacs", "emacs-nox"), requireEditor(t, "emacsclient", "emacs-nox"), requireEditor(t, "tmux", "tmux"), gemkittest.Gemkit(t))
		}},
	}
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core")
	for _, e := range editors {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			d := e.start(t, h)
			_, disc := discoveryFile(t, h, d.PID())
			port := strconv.Itoa(int(disc["port"].(float64)))
			waitFor(t, "the editor's terminal variables", func() bool { return d.Getenv(t, ide.EnvServerPort) == port })

			// The environment of a terminal the editor opens.
			env := append(h.env(), "SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22") // not "in a container" even where /.dockerenv exists
			for _, k := range []string{ide.EnvServerPort, ide.EnvAuthToken, ide.EnvPID, ide.EnvWorkspacePath} {
				env = append(env, k+"="+d.Getenv(t, k))
			}
			rc := startRealClient(t, node, interop, h.ws, env)

			conn := rc.connect(t)
			if conn.Status != "connected" || conn.IDE != e.display || !conn.Diffing {
				t.Fatalf("IdeClient.connect: %+v; want connected to %s with diffing", conn, e.display)
			}

			a := h.path("a.go")
			d.Open(t, a, 3, 2)
			rc.waitFile(t, map[string]any{"op": "waitActive", "path": a, "line": 3, "character": 2})

			// Accepted in the editor after an edit there.
			proposal := strings.Replace(fileA, "hi", "hello", 1)
			rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": proposal})
			waitFor(t, "the diff shown in the editor", func() bool { _, ok := d.Diff(t, a); return ok })
			d.AppendRight(t, a, "// edited by hand")
			d.Accept(t, a)
			var res struct {
				Status  string
				Content *string
			}
			rc.read(t, &res)
			if res.Status != "accepted" || res.Content == nil || *res.Content != proposal+"// edited by hand\n" {
				t.Fatalf("IdeClient.openDiff accepted = %+v", res)
			}

			// Rejected in the editor.
			rc.send(t, map[string]any{"op": "openDiff", "path": a, "content": "package main\n"})
			waitFor(t, "the second diff shown in the editor", func() bool { _, ok := d.Diff(t, a); return ok })
			d.Reject(t, a)
			res.Content = nil
			rc.read(t, &res)
			if res.Status != "rejected" || res.Content != nil {
				t.Fatalf("IdeClient.openDiff rejected = %+v", res)
			}
			rc.send(t, map[string]any{"op": "quit"})
			d.Quit(t)
			select {
			case <-d.Exited():
			case <-time.After(waitTimeout):
				t.Fatal("the editor did not exit")
			}
		})
	}
}

type realClient struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startRealClient(t *testing.T, node, interop, ws string, env []string) *realClient {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "real-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, interop, ws)
	cmd.Dir = ws
	cmd.Env = env
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startProcess(t, cmd)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &realClient{in: in, out: sc}
}

func (r *realClient) send(t *testing.T, cmd map[string]any) {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := r.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("real client: %v", err)
	}
}

// read waits up to a minute for the next answer: the real client's
// answer comes after the editor's, and both may be slow on a loaded
// machine.
func (r *realClient) read(t *testing.T, v any) {
	t.Helper()
	r.readWithin(t, v, time.Minute)
}

// readWithin waits up to d for the next answer, which must not be an
// error, and decodes it into v.
func (r *realClient) readWithin(t *testing.T, v any, d time.Duration) {
	t.Helper()
	b := r.next(t, d)
	var e struct{ Error string }
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		t.Fatalf("real client: %s", e.Error)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("real client answer %s: %v", b, err)
	}
}

// next waits up to d for the next answer line.
func (r *realClient) next(t *testing.T, d time.Duration) []byte {
	t.Helper()
	line := make(chan []byte, 1)
	go func() {
		if r.out.Scan() {
			line <- append([]byte(nil), r.out.Bytes()...)
		}
		close(line)
	}()
	select {
	case b, ok := <-line:
		if !ok {
			t.Fatal("the real client ended without answering")
		}
		return b
	case <-time.After(d):
		t.Fatal("the real client did not answer in time")
	}
	return nil
}

// realConn is what the real client's connect says.
type realConn struct {
	Status, IDE string
	Diffing     bool
}

// connectRealClient starts the real Gemini CLI client code as a CLI in a
// terminal of the editor whose pid is editorPID (GEMINI_CLI_IDE_PID, and
// not "in a container" even where /.dockerenv exists) and connects it.
func connectRealClient(t *testing.T, h *harness, node, interop string, editorPID int) (*realClient, realConn) {
	t.Helper()
	env := append(h.env(), "SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22", ide.EnvPID+"="+strconv.Itoa(editorPID))
	rc := startRealClient(t, node, interop, h.ws, env)
	return rc, rc.connect(t)
}

// connect has the real client connect, and returns what it says. Node
// loads the whole of gemini-cli-core first: the answer may take as long
// as a CLI's start.
func (r *realClient) connect(t *testing.T) realConn {
	t.Helper()
	var conn realConn
	r.send(t, map[string]any{"op": "connect"})
	r.readWithin(t, &conn, gemkittest.ScreenTimeout)
	return conn
}

// waitFile sends the real client one of its waits (waitOpen, waitActive)
// with a one-minute limit (editors report the cursor on timers), and
// returns the file.
func (r *realClient) waitFile(t *testing.T, cmd map[string]any) *ide.File {
	t.Helper()
	cmd["timeoutMs"] = time.Minute.Milliseconds()
	r.send(t, cmd)
	b := r.next(t, time.Minute+waitTimeout)
	var got struct {
		File  *ide.File
		Error string
		Files []ide.File
	}
	if err := json.Unmarshal(b, &got); err != nil || got.File == nil {
		t.Fatalf("real client %v: %s; its open files: %+v", cmd, got.Error, got.Files)
	}
	return got.File
}
