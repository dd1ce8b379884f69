package lspbroker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// recording is a Handler that records what it is given and answers from
// a table by method; a request about a .zig file is refused.
type recording struct {
	mu     sync.Mutex
	got    []string // method and params as they came
	asked  atomic.Int32
	answer map[string]any
}

func (r *recording) handle(_ context.Context, method string, params json.RawMessage) (any, error) {
	r.asked.Add(1)
	r.mu.Lock()
	r.got = append(r.got, method+" "+string(params))
	r.mu.Unlock()
	var p struct {
		Path string `json:"path"`
	}
	json.Unmarshal(params, &p)
	switch {
	case filepath.Ext(p.Path) == ".zig":
		return nil, jsonrpc.InvalidParams(method, "no zls")
	case filepath.Ext(p.Path) == ".rs":
		return nil, errors.New("rust-analyzer crashed twice")
	}
	if a, ok := r.answer[method]; ok {
		return a, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + method}
}

// inProcess returns a Start that runs a broker of h in this process,
// and a channel closed when that broker has ended; starts counts them.
func inProcess(t *testing.T, sock string, h Handler, starts *atomic.Int32) (func(context.Context) error, <-chan struct{}) {
	ended := make(chan struct{})
	return func(context.Context) error {
		if starts.Add(1) > 1 {
			t.Error("a second broker was started")
			return errors.New("second broker")
		}
		ln, err := Listen(sock)
		if err != nil {
			return err
		}
		go func() {
			(&Broker{Handler: h, Workspace: "/ws"}).Serve(context.Background(), ln)
			close(ended)
		}()
		return nil
	}, ended
}

var definition = ide.LSPRequestParams{Path: "/ws/a.go", Method: "textDocument/definition",
	Params: json.RawMessage(`{"textDocument":{"uri":"file:///ws/a.go"},"position":{"line":3,"character":5}}`), Timeout: 5000}

const goplsAnswer = `{"clients":["gopls"],"answers":[{"client":"gopls","result":[{"uri":"file:///ws/def.go","range":{"start":{"line":3,"character":5},"end":{"line":3,"character":9}}}]}]}`

// The broker forwards each language request unchanged, method and
// params as the client sent them, and its Handler's answer or error back
// as it was: the editor protocol passes through it as it would pass
// through an editor's companion.
func TestBrokerForwards(t *testing.T) {
	cases := []struct {
		name, method string
		params       any
		wantParams   string
		want         string // the result, or the error's text
		wantCode     int
	}{
		{"clients", ide.MethodLSPClients, ide.LSPClientsParams{Path: "/ws/a.go"}, `{"path":"/ws/a.go"}`, `{"clients":[{"name":"gopls","indexing":"Loading packages"}]}`, 0},
		{"request", ide.MethodLSPRequest, definition, `{"path":"/ws/a.go","method":"textDocument/definition","params":{"textDocument":{"uri":"file:///ws/a.go"},"position":{"line":3,"character":5}},"timeout":5000}`, goplsAnswer, 0},
		{"changed with a text", ide.MethodLSPChanged, ide.LSPChangedParams{Paths: []string{"/ws/a.go"}, Texts: map[string]string{"/ws/a.go": "package a\n"}}, `{"paths":["/ws/a.go"],"texts":{"/ws/a.go":"package a\n"}}`, `{}`, 0},
		{"diagnostics", ide.MethodDiagnostics, ide.DiagnosticsParams{Settle: 3000}, `{"settle":3000}`, `{"files":[{"path":"/ws/a.go","diagnostics":[],"stale":"gopls did not report in time"}]}`, 0},
		{"refused", ide.MethodLSPRequest, ide.LSPRequestParams{Path: "/ws/x.zig", Method: "textDocument/hover", Params: json.RawMessage(`{}`)}, "", "Invalid params for lsp/request: no zls", jsonrpc.CodeInvalidParams},
		{"failed", ide.MethodLSPClients, ide.LSPClientsParams{Path: "/ws/x.rs"}, `{"path":"/ws/x.rs"}`, "rust-analyzer crashed twice", jsonrpc.CodeInternalError},
		{"unknown", "lsp/rename", struct{}{}, `{}`, "Method not found: lsp/rename", jsonrpc.CodeMethodNotFound},
	}
	h := &recording{answer: map[string]any{
		ide.MethodLSPClients:  ide.LSPClientsResult{Clients: []ide.LSPClient{{Name: "gopls", Indexing: "Loading packages"}}},
		ide.MethodLSPRequest:  json.RawMessage(goplsAnswer),
		ide.MethodLSPChanged:  struct{}{},
		ide.MethodDiagnostics: ide.DiagnosticsResult{Files: []ide.FileDiagnostics{{Path: "/ws/a.go", Diagnostics: []ide.Diagnostic{}, Stale: "gopls did not report in time"}}},
	}}
	sock := filepath.Join(t.TempDir(), "b.sock")
	var starts atomic.Int32
	start, _ := inProcess(t, sock, h.handle, &starts)
	c := &Client{Socket: sock, Start: start}
	defer c.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.method == ide.MethodLSPChanged {
				// lsp/changed starts no broker: one runs by now.
				if err := c.Call(context.Background(), ide.MethodLSPClients, ide.LSPClientsParams{}, nil); err != nil {
					t.Fatal(err)
				}
			}
			h.mu.Lock()
			h.got = nil
			h.mu.Unlock()
			var res json.RawMessage
			err := c.Call(context.Background(), tc.method, tc.params, &res)
			if tc.wantCode != 0 {
				var je *jsonrpc.Error
				if !errors.As(err, &je) || je.Code != tc.wantCode || je.Message != tc.want {
					t.Fatalf("err = %#v, want code %d %q", err, tc.wantCode, tc.want)
				}
			} else if err != nil || string(res) != tc.want {
				t.Fatalf("got %s, %v; want %s", res, err, tc.want)
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if tc.wantParams != "" && (len(h.got) != 1 || h.got[0] != tc.method+" "+tc.wantParams) {
				t.Errorf("the handler was given %q, want %q", h.got, tc.method+" "+tc.wantParams)
			}
		})
	}
	if starts.Load() != 1 {
		t.Errorf("brokers started: %d", starts.Load())
	}
}

// Two clients asking at once start one broker; its answers reach both;
// it ends when both have gone, and its socket is gone with it.
func TestBrokerShared(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "b.sock")
	h := &recording{answer: map[string]any{ide.MethodLSPRequest: json.RawMessage(goplsAnswer)}}
	var starts atomic.Int32
	start, ended := inProcess(t, sock, h.handle, &starts)
	a, b := &Client{Socket: sock, Start: start}, &Client{Socket: sock, Start: start}
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, c := range []*Client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var res ide.LSPRequestResult
			if err := c.Call(ctx, ide.MethodLSPRequest, definition, &res); err != nil || len(res.Answers) != 1 || res.Answers[0].Client != "gopls" {
				t.Errorf("definition: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if starts.Load() != 1 || h.asked.Load() != 2 {
		t.Fatalf("brokers started %d, questions %d", starts.Load(), h.asked.Load())
	}
	if hello := a.Broker(); hello.Workspace != "/ws" || hello.Pid != os.Getpid() {
		t.Errorf("hello: %+v", hello)
	}
	a.Close()
	select {
	case <-ended:
		t.Fatal("the broker ended with a client left")
	case <-time.After(100 * time.Millisecond):
	}
	b.Close()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not end when its last client went")
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is left: %v", err)
	}
}

// A client whose broker went is answered by a new one.
func TestBrokerReplaced(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "b.sock")
	var n atomic.Int32
	var cancel context.CancelFunc
	start := func(context.Context) error {
		n.Add(1)
		ln, err := Listen(sock)
		if err != nil {
			return err
		}
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		go (&Broker{Handler: (&recording{answer: map[string]any{ide.MethodLSPRequest: json.RawMessage(goplsAnswer)}}).handle}).Serve(ctx, ln)
		return nil
	}
	c := &Client{Socket: sock, Start: start}
	defer c.Close()
	if err := c.Call(context.Background(), ide.MethodLSPRequest, definition, nil); err != nil {
		t.Fatal(err)
	}
	cancel() // the broker is killed
	// A new broker takes over on its own time, with no event to wait on.
	var err error
	if !gemkittest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
		err = c.Call(context.Background(), ide.MethodLSPRequest, definition, nil)
		return err == nil && n.Load() == 2
	}) {
		t.Fatalf("not replaced: %v (brokers %d)", err, n.Load())
	}
}

// lsp/changed starts no broker: with none running, no server has the file.
func TestChangedStartsNothing(t *testing.T) {
	c := &Client{Socket: filepath.Join(t.TempDir(), "b.sock"), Start: func(context.Context) error {
		t.Error("a broker was started")
		return nil
	}}
	if err := c.Call(context.Background(), ide.MethodLSPChanged, ide.LSPChangedParams{Paths: []string{"/ws/a.go"}}, nil); err != nil {
		t.Fatal(err)
	}
}

// A broker no client reaches ends by itself.
func TestBrokerNoClient(t *testing.T) {
	ln, err := Listen(filepath.Join(t.TempDir(), "b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		(&Broker{Handler: (&recording{}).handle, FirstClient: 50 * time.Millisecond}).Serve(context.Background(), ln)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the broker waits for good")
	}
}

// A second broker on a live socket is refused.
func TestListenRunning(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "b.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(sock); !errors.Is(err, ErrRunning) {
		t.Fatalf("err = %v", err)
	}
}
