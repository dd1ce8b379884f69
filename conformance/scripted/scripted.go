// Package scripted plays the editor of `gemkit ide serve --editor stdio`:
// it starts the companion as a child process and speaks the [editor
// protocol] on its stdin and stdout, so that tests and benchmarks drive a
// real companion process the way an editor plugin would, and answer its
// diffs as a person would. [github.com/gemkit/gemkit/companion/editorproto] is
// the other end.
//
// [editor protocol]: https://github.com/gemkit/gemkit/blob/main/docs/editor-protocol.md
package scripted

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
	"strconv"
	"sync"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/proc"
)

// Diff is a diff the companion asked the editor to show.
type Diff struct {
	FilePath   string `json:"filePath"`
	NewContent string `json:"newContent"`
	// Agent is the agent that proposed it, when the companion names one.
	Agent string `json:"agent,omitempty"`
}

// Ready is what the companion announces once it serves.
type Ready struct {
	Port          int               `json:"port"`
	DiscoveryFile string            `json:"discoveryFile"`
	Env           map[string]string `json:"env"`
}

// Editor is a running companion with this package as its editor.
type Editor struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	Ready Ready
	// Opened receives every diff the companion shows; Closed every path
	// it closes through closeDiff.
	Opened chan Diff
	Closed chan string

	wmu         sync.Mutex
	mu          sync.Mutex
	open        map[string]string // the right side of each shown diff
	diagnostics func(path string) any
	exited      chan struct{}
	err         error
}

// Options start a companion.
type Options struct {
	// Binary is the gemkit executable, run as `gemkit ide serve`.
	Binary string
	// Command, when set, is the companion's program and first arguments
	// instead (for example node and bench/reference/companion.mjs); it
	// must take the same --editor, --ide-pid and --workspace flags.
	Command []string
	// Workspace folders; TMPDIR puts the discovery directory under it.
	Workspace []string
	TMPDIR    string
	// IDEPID names the discovery file; default this process.
	IDEPID int
	// Env is added to the child's environment.
	Env []string
	// Stderr receives the companion's log; nil discards it.
	Stderr io.Writer
	// Diagnostics, when set, answers diagnostics/get: the value is sent
	// as the "files" of the result. Unset, the editor does not know the
	// method (as a plugin without diagnostics).
	Diagnostics func(path string) any
}

// Start runs `gemkit ide serve --editor stdio` and waits for server/ready.
func Start(ctx context.Context, o Options) (*Editor, error) {
	if o.IDEPID == 0 {
		o.IDEPID = os.Getpid()
	}
	argv := o.Command
	if len(argv) == 0 {
		argv = []string{o.Binary, "ide", "serve"}
	}
	args := append(append([]string(nil), argv[1:]...), "--editor", "stdio", "--ide-pid", strconv.Itoa(o.IDEPID))
	for _, w := range o.Workspace {
		args = append(args, "--workspace", w)
	}
	cmd := exec.Command(argv[0], args...)
	cmd.Env = os.Environ()
	if o.TMPDIR != "" {
		// The agents' lock files (Claude Code's, Qwen Code's) go under it
		// too, unless Env says where.
		cmd.Env = append(cmd.Env, "TMPDIR="+o.TMPDIR)
		for _, a := range ide.Agents {
			if a.LockDir != "" && a.HomeEnv != "" {
				cmd.Env = append(cmd.Env, a.HomeEnv+"="+filepath.Join(o.TMPDIR, a.ID))
			}
		}
	}
	cmd.Env = append(cmd.Env, o.Env...)
	cmd.Stderr = o.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := proc.StartOwned(cmd); err != nil {
		return nil, fmt.Errorf("start companion: %w", err)
	}
	e := &Editor{cmd: cmd, in: in, Opened: make(chan Diff, 64), Closed: make(chan string, 64), open: map[string]string{}, exited: make(chan struct{}), diagnostics: o.Diagnostics}
	ready := make(chan Ready, 1)
	go e.read(out, ready)
	go func() {
		e.err = cmd.Wait()
		close(e.exited)
	}()
	select {
	case r := <-ready:
		e.Ready = r
		return e, nil
	case <-e.exited:
		return nil, fmt.Errorf("companion exited before it was ready: %v", e.err)
	case <-ctx.Done():
		e.Stop()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		e.Stop()
		return nil, errors.New("companion not ready within 30 s")
	}
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

func (e *Editor) read(out io.Reader, ready chan<- Ready) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch m.Method {
		case "server/ready":
			var r Ready
			if json.Unmarshal(m.Params, &r) == nil {
				select {
				case ready <- r:
				default:
				}
			}
		case "diff/open":
			var d Diff
			_ = json.Unmarshal(m.Params, &d)
			e.mu.Lock()
			e.open[d.FilePath] = d.NewContent
			e.mu.Unlock()
			e.reply(m.ID, map[string]any{})
			e.Opened <- d
		case "diagnostics/get":
			if e.diagnostics == nil {
				e.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
				break
			}
			var p struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(m.Params, &p)
			e.reply(m.ID, map[string]any{"files": e.diagnostics(p.Path)})
		case "diff/close":
			var p struct {
				FilePath string `json:"filePath"`
			}
			_ = json.Unmarshal(m.Params, &p)
			e.mu.Lock()
			content, ok := e.open[p.FilePath]
			delete(e.open, p.FilePath)
			e.mu.Unlock()
			if ok {
				e.reply(m.ID, map[string]any{"content": content})
			} else {
				e.reply(m.ID, map[string]any{})
			}
			e.Closed <- p.FilePath
		default:
			if len(m.ID) > 0 && m.Method != "" {
				e.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			}
		}
	}
}

func (e *Editor) reply(id json.RawMessage, result any) {
	e.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (e *Editor) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	_, _ = e.in.Write(append(b, '\n'))
}

func (e *Editor) notify(method string, params any) {
	e.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// Focus makes path the active file, with an optional 1-based cursor and
// a selection.
func (e *Editor) Focus(path string, line, character int, selected string) {
	p := map[string]any{"path": path}
	if line > 0 {
		p["cursor"] = map[string]int{"line": line, "character": character}
	}
	if selected != "" {
		p["selectedText"] = selected
	}
	e.notify("editor/focus", p)
}

// Mention @-mentions path, with lines (1-based) when start is not 0.
func (e *Editor) Mention(path string, start, end int) {
	p := map[string]any{"path": path}
	if start > 0 {
		p["lineStart"], p["lineEnd"] = start, end
	}
	e.notify("editor/mention", p)
}

// Close closes path in the editor.
func (e *Editor) Close(path string) { e.notify("editor/close", map[string]string{"path": path}) }

// Trust sets the workspace trust.
func (e *Editor) Trust(trusted bool) {
	e.notify("workspace/update", map[string]any{"trusted": trusted})
}

// Accept answers the diff of path as accepted with content (the person
// may have edited the proposal).
func (e *Editor) Accept(path, content string) {
	e.mu.Lock()
	delete(e.open, path)
	e.mu.Unlock()
	e.notify("diff/accepted", map[string]string{"filePath": path, "content": content})
}

// Reject answers the diff of path as rejected.
func (e *Editor) Reject(path string) {
	e.mu.Lock()
	delete(e.open, path)
	e.mu.Unlock()
	e.notify("diff/rejected", map[string]string{"filePath": path})
}

// Exited is closed when the companion process has ended.
func (e *Editor) Exited() <-chan struct{} { return e.exited }

// Stop closes the companion's stdin (which stops it cleanly) and waits,
// killing it after 5 s.
func (e *Editor) Stop() {
	_ = e.in.Close()
	select {
	case <-e.exited:
	case <-time.After(5 * time.Second):
		_ = e.cmd.Process.Kill()
		<-e.exited
	}
}

// Kill ends the companion at once, as a crash would.
func (e *Editor) Kill() {
	_ = e.cmd.Process.Kill()
	<-e.exited
}
