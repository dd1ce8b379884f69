//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/proc"
)

// serverSpec says how to start one companion as the editor that owns it.
type serverSpec struct {
	name string
	// argv starts the companion in stdio editor mode; the harness adds
	// --workspace.
	argv []string
}

// server is one running companion with the harness as its editor: it
// answers diff/open at once and then accepts the diff, like a person who
// accepts everything instantly.
type server struct {
	spec      serverSpec
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	wmu       sync.Mutex
	discovery string
	file      ide.DiscoveryFile
	// startup is the time from starting the process to its discovery
	// file being written.
	startup time.Duration
	exited  chan struct{}
	stderr  *tailBuffer
}

// with returns spec with args added to its argv.
func (spec serverSpec) with(args ...string) serverSpec {
	spec.argv = append(append([]string(nil), spec.argv...), args...)
	return spec
}

var discoveryName = regexp.MustCompile(`^gemini-ide-server-\d+-\d+\.json$`)

// startServer starts spec in a private TMPDIR (so that its discovery file
// reaches no other Gemini CLI on the machine) and waits until it has
// written its discovery file.
func startServer(ctx context.Context, spec serverSpec, workspace string) (*server, error) {
	tmp, err := os.MkdirTemp("", "gemkit-bench-tmp-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, filepath.FromSlash(ide.DiscoveryDirName))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	w, err := newDirWatch(dir)
	if err != nil {
		return nil, err
	}
	defer w.close()

	argv := append(append([]string(nil), spec.argv...), "--workspace", workspace)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "CLAUDE_CONFIG_DIR="+filepath.Join(tmp, "claude"), "QWEN_HOME="+filepath.Join(tmp, "qwen"), "NO_COLOR=1")
	cmd.Dir = workspace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{spec: spec, cmd: cmd, stdin: stdin, exited: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	cmd.Stderr = s.stderr

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	go func() {
		cmd.Wait()
		os.RemoveAll(tmp)
		close(s.exited)
	}()
	go s.readEditorProtocol(stdout)

	name, at, err := w.wait(ctx, 20*time.Second, s.exited)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: waiting for its discovery file: %w (stderr: %s)", spec.name, err, s.stderr)
	}
	s.startup = at.Sub(start)
	s.discovery = filepath.Join(dir, name)
	b, err := os.ReadFile(s.discovery)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %w", spec.name, err)
	}
	if err := json.Unmarshal(b, &s.file); err != nil || s.file.Port == 0 || s.file.AuthToken == "" {
		s.stop()
		return nil, fmt.Errorf("%s: bad discovery file %s: %v: %s", spec.name, s.discovery, err, b)
	}
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stop closes the editor's side of stdin, which tells the companion to
// shut down, and kills it if it has not within a few seconds.
func (s *server) stop() {
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// send writes one JSON-RPC message to the companion.
func (s *server) send(msg any) error {
	_, err := s.sendAt(msg)
	return err
}

// sendAt is send, and returns when the encoded line started on its way to
// the companion: the editor's own encoding is not the companion's time.
func (s *server) sendAt(msg any) (time.Time, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return time.Time{}, err
	}
	b = append(b, '\n')
	s.wmu.Lock()
	defer s.wmu.Unlock()
	at := time.Now()
	_, err = s.stdin.Write(b)
	return at, err
}

func (s *server) notify(method string, params any) error {
	return s.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// notifyAt is notify, and returns when the line was written.
func (s *server) notifyAt(method string, params any) (time.Time, error) {
	return s.sendAt(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// readEditorProtocol plays the editor: diff/open is answered at once and
// the diff accepted with the proposed content; diff/close finds nothing
// open.
func (s *server) readEditorProtocol(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 32<<20)
	for sc.Scan() {
		var m rpcMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Method == "" || len(m.ID) == 0 {
			continue
		}
		switch m.Method {
		case "diff/open":
			var p ide.OpenDiffRequest
			json.Unmarshal(m.Params, &p)
			s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": struct{}{}})
			s.notify("diff/accepted", ide.DiffAccepted{FilePath: p.FilePath, Content: p.NewContent})
		case "diff/close":
			s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": nil}})
		default:
			s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "unknown method"}})
		}
	}
}

// rssKB reads the resident set size of pid, in KiB.
func rssKB(pid int) (int, error) {
	n, err := proc.StatusBytes(pid, "VmRSS")
	return int(n >> 10), err
}

// dirWatch reports files written into one directory, through inotify, so
// that the start-up time is measured to the write itself, not to a poll.
type dirWatch struct {
	f *os.File
}

func newDirWatch(dir string) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	return &dirWatch{f: os.NewFile(uintptr(fd), "inotify")}, nil
}

func (w *dirWatch) close() { w.f.Close() }

// wait returns the name of the first discovery file written (closed after
// writing, or renamed into place) and when it was noticed.
func (w *dirWatch) wait(ctx context.Context, timeout time.Duration, exited <-chan struct{}) (string, time.Time, error) {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return "", time.Time{}, err
		}
		select {
		case <-exited:
			return "", time.Time{}, errors.New("the server exited")
		default:
		}
		w.f.SetReadDeadline(minTime(deadline, time.Now().Add(200*time.Millisecond)))
		n, err := w.f.Read(buf)
		at := time.Now()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if at.After(deadline) {
				return "", time.Time{}, errors.New("timed out")
			}
			continue
		}
		if err != nil {
			return "", time.Time{}, err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			name := strings.TrimRight(string(nameBytes), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if discoveryName.MatchString(name) {
				return name, at, nil
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// tailBuffer keeps the last max bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
