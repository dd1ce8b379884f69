package lspserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

const waitTimeout = 10 * time.Second

// recorder is a companion.Events that records each call as one line.
type recorder struct {
	mu     sync.Mutex
	events []string
	signal chan struct{}
	// onAccepted, when set, runs in DiffAccepted before it is recorded:
	// what the agent finds on disk when the answer reaches it.
	onAccepted func(path string)
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1000)} }

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	r.signal <- struct{}{}
}

func (r *recorder) Focus(path string, c *ide.Cursor, sel string) {
	if c == nil {
		r.add("focus %s", path)
		return
	}
	r.add("focus %s %d:%d %q", path, c.Line, c.Character, sel)
}
func (r *recorder) Selection(path string, c ide.Cursor, sel string) {
	r.add("selection %s %d:%d %q", path, c.Line, c.Character, sel)
}
func (r *recorder) Close(path string)              { r.add("close %s", path) }
func (r *recorder) Rename(oldPath, newPath string) { r.add("rename %s %s", oldPath, newPath) }
func (r *recorder) Delete(path string)             { r.add("delete %s", path) }
func (r *recorder) UpdateWorkspace(paths []string, trusted *bool) error {
	r.add("workspace %v", paths)
	return nil
}
func (r *recorder) DiffAccepted(path, content string) {
	if r.onAccepted != nil {
		r.onAccepted(path)
	}
	r.add("accepted %s %q", path, content)
}
func (r *recorder) DiffRejected(path string) { r.add("rejected %s", path) }

// wait returns once an event equal to want was recorded.
func (r *recorder) wait(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		r.mu.Lock()
		for _, e := range r.events {
			if e == want {
				r.mu.Unlock()
				return
			}
		}
		got := append([]string(nil), r.events...)
		r.mu.Unlock()
		select {
		case <-r.signal:
		case <-deadline:
			t.Fatalf("event %q never came; got %q", want, got)
		}
	}
}

// client is the test's language client: it writes frames to the server
// and reads the server's.
type client struct {
	t      *testing.T
	in     io.WriteCloser
	frames chan map[string]any
	log    *gemkittest.Output
	srv    *Server
	ev     *recorder
	init   chan Init
	// diffsAtStart is ShowsDiffs as the companion would see it when it
	// starts (in the start callback).
	diffsAtStart chan bool
	done         chan error
	// stop ends the context the server runs in, as SIGTERM does.
	stop context.CancelFunc
}

// start runs a Server against a test client.
func start(t *testing.T, o Options) *client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	logBuf := &gemkittest.Output{}
	o.Logger = slog.New(slog.NewTextHandler(logBuf, nil))
	if o.Settle == 0 {
		o.Settle = 20 * time.Millisecond
	}
	c := &client{t: t, in: inW, frames: make(chan map[string]any, 100), ev: newRecorder(), init: make(chan Init, 1), diffsAtStart: make(chan bool, 1), done: make(chan error, 1)}
	c.srv = New(inR, outW, o)
	go func() {
		fr := jsonrpc.HeaderFramer().NewReader(outR, 1<<30)
		for {
			b, err := fr.Next()
			if err != nil {
				close(c.frames)
				return
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				panic(fmt.Sprintf("server sent %q: %v", b, err))
			}
			c.frames <- m
		}
	}()
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go func() {
		c.done <- c.srv.Run(ctx, func(in Init) (companion.Events, error) {
			c.diffsAtStart <- c.srv.ShowsDiffs()
			c.init <- in
			return c.ev, nil
		})
		outW.Close()
	}()
	t.Cleanup(func() {
		defer stop()
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(waitTimeout):
			t.Error("the server did not stop when its input closed")
		}
	})
	c.log = logBuf
	return c
}

// logText is what the server has logged so far.
func (c *client) logText() string {
	return c.log.String()
}

// raw writes bytes as they are.
func (c *client) raw(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s); err != nil {
		c.t.Fatal(err)
	}
}

// send writes one framed message.
func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.raw(string(frame(b)))
}

func (c *client) request(id any, method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

func (c *client) notification(method string, params any) {
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// next returns the server's next message.
func (c *client) next() map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.frames:
		if !ok {
			c.t.Fatal("the server's output ended")
		}
		return m
	case <-time.After(waitTimeout):
		c.t.Fatal("no message from the server")
	}
	return nil
}

// nextMethod returns the next message, which must call method.
func (c *client) nextMethod(method string) map[string]any {
	c.t.Helper()
	m := c.next()
	if m["method"] != method {
		c.t.Fatalf("got %v, want a %s", js(m), method)
	}
	return m
}

// answer replies to the server's request m.
func (c *client) answer(m map[string]any, result any) {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": result})
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// initialize runs the handshake with capabilities caps.
func (c *client) initialize(params map[string]any) Init {
	c.t.Helper()
	c.request(1, "initialize", params)
	m := c.next()
	if m["id"] != float64(1) || m["result"] == nil {
		c.t.Fatalf("initialize answered %s", js(m))
	}
	c.notification("initialized", map[string]any{})
	return <-c.init
}

// nvimCaps are the client capabilities of Neovim 0.7's built-in client
// that gemkit reads (runtime/lua/vim/lsp/protocol.lua,
// make_client_capabilities, v0.7.2): applyEdit, and showMessage without
// showDocument.
var nvimCaps = map[string]any{
	"workspace": map[string]any{"applyEdit": true, "workspaceFolders": true},
	"window": map[string]any{
		"workDoneProgress": true,
		"showMessage":      map[string]any{"messageActionItem": map[string]any{"additionalPropertiesSupport": false}},
		"showDocument":     map[string]any{"support": false},
	},
}

// eglotCaps are eglot 1.9's (eglot.el, eglot-client-capabilities):
// applyEdit and no window capability at all.
var eglotCaps = map[string]any{
	"workspace": map[string]any{"applyEdit": true, "executeCommand": map[string]any{"dynamicRegistration": false}, "workspaceFolders": true},
}

// nvim010Caps are Neovim 0.10's (runtime/lua/vim/lsp/protocol.lua,
// make_client_capabilities, v0.10.4): applyEdit, showMessage and
// showDocument.
var nvim010Caps = map[string]any{
	"workspace": map[string]any{"applyEdit": true, "workspaceFolders": true},
	"window": map[string]any{
		"workDoneProgress": true,
		"showMessage":      map[string]any{"messageActionItem": map[string]any{"additionalPropertiesSupport": false}},
		"showDocument":     map[string]any{"support": true},
	},
}
