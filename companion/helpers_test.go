package companion

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
)

// fakeEditor is a scripted stand-in for an editor: tests decide how it
// answers, and it records what the companion asked. The real editors (the
// stdio protocol, the terminal) have tests of their own.
type fakeEditor struct {
	mu     sync.Mutex
	opened []ide.OpenDiffRequest
	// proposers holds ProposedBy of each OpenDiff's context, in order.
	proposers []string
	closed    []string
	written   []string
	// openErr, when set, is returned by OpenDiff; hang makes OpenDiff wait
	// for its context.
	openErr error
	hang    bool
	// onOpen runs after a diff is shown (e.g. to accept it at once).
	onOpen func(path, content string)
	// closeContent is what CloseDiff returns for a path; absent: no diff.
	closeContent map[string]string
	// onClose runs inside CloseDiff (e.g. a plugin reporting the tab
	// closing as a rejection).
	onClose func(path string)
	openCh  chan ide.OpenDiffRequest
}

func newFakeEditor() *fakeEditor {
	return &fakeEditor{closeContent: map[string]string{}, openCh: make(chan ide.OpenDiffRequest, 100)}
}

func (f *fakeEditor) OpenDiff(ctx context.Context, path, content string) error {
	f.mu.Lock()
	err, hang, on := f.openErr, f.hang, f.onOpen
	f.opened = append(f.opened, ide.OpenDiffRequest{FilePath: path, NewContent: content})
	f.proposers = append(f.proposers, ProposedBy(ctx))
	f.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	f.openCh <- ide.OpenDiffRequest{FilePath: path, NewContent: content}
	if on != nil {
		on(path, content)
	}
	return nil
}

func (f *fakeEditor) CloseDiff(_ context.Context, path string) (string, bool, error) {
	f.mu.Lock()
	f.closed = append(f.closed, path)
	c, ok := f.closeContent[path]
	on := f.onClose
	f.mu.Unlock()
	if on != nil {
		on(path)
	}
	return c, ok, nil
}

func (f *fakeEditor) FileWritten(_ context.Context, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written = append(f.written, path)
	return nil
}

// startServer runs a companion for one test, with a private discovery
// directory, and stops it at the end of the test.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	srv, _ := startStoppable(t, cfg)
	return srv
}

// startStoppable is startServer that also returns stop, which ends Serve
// and returns once it has (the test's end calls it too).
func startStoppable(t testing.TB, cfg Config) (srv *Server, stop func()) {
	t.Helper()
	if cfg.Workspace == nil {
		cfg.Workspace = []string{t.TempDir()}
	}
	if cfg.DiscoveryDir == "" {
		cfg.DiscoveryDir = filepath.Join(t.TempDir(), "gemini", "ide")
	}
	if cfg.PID == 0 {
		cfg.PID = os.Getpid()
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		t.Fatalf("Serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server not ready")
	}
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	})
	t.Cleanup(stop)
	return srv, stop
}

// rawClient is a minimal MCP Streamable HTTP client that keeps every byte
// it receives, so that tests can check the wire form (no nulls, content:
// []) as well as the meaning.
type rawClient struct {
	t      testing.TB
	srv    *Server
	hc     *http.Client
	sid    string
	nextID int
	mu     sync.Mutex

	events    chan []byte // every SSE message of the GET stream, pings included
	cancelGET context.CancelFunc
	getDone   chan struct{}
}

func dial(t testing.TB, srv *Server) *rawClient {
	t.Helper()
	return dialAs(t, srv, "test", "0", ide.ProtocolVersion)
}

// dialAs is dial for a client that says of itself the clientInfo name and
// version and asks for protocol at initialize.
func dialAs(t testing.TB, srv *Server, name, version, protocol string) *rawClient {
	t.Helper()
	c := &rawClient{t: t, srv: srv, hc: &http.Client{Transport: &http.Transport{}}, events: make(chan []byte, 10000)}
	res, hdr := c.post(map[string]any{
		"jsonrpc": "2.0", "id": c.id(), "method": "initialize",
		"params": map[string]any{"protocolVersion": protocol, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": name, "version": version}},
	})
	if bytes.Contains(res, []byte("null")) {
		t.Fatalf("initialize result carries a null: %s", res)
	}
	var init struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(res, &init); err != nil {
		t.Fatalf("initialize: %v: %s", err, res)
	}
	if (protocol == ide.ProtocolVersion && init.Result.ProtocolVersion != protocol) || init.Result.ServerInfo.Name != ide.ServerName {
		t.Fatalf("initialize result: %s", res)
	}
	c.sid = hdr.Get(ide.HeaderSessionID)
	if c.sid == "" {
		t.Fatal("no session id")
	}
	c.notify("notifications/initialized")
	c.openGET()
	t.Cleanup(c.close)
	return c
}

func (c *rawClient) id() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return c.nextID
}

func (c *rawClient) request(method string, body []byte) *http.Request {
	req, err := http.NewRequest(method, c.srv.URL(), bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.srv.Token())
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sid != "" {
		req.Header.Set(ide.HeaderSessionID, c.sid)
		req.Header.Set(ide.HeaderProtocolVersion, ide.ProtocolVersion)
	}
	return req
}

// post sends one JSON-RPC message and returns the response message (from a
// JSON or an SSE body).
func (c *rawClient) post(msg any) ([]byte, http.Header) {
	c.t.Helper()
	body, _ := json.Marshal(msg)
	resp, err := c.hc.Do(c.request(http.MethodPost, body))
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("POST status %d: %s", resp.StatusCode, data)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(data), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				data = []byte(d)
			}
		}
	}
	return bytes.TrimSpace(data), resp.Header
}

func (c *rawClient) notify(method string) {
	c.t.Helper()
	c.post(map[string]any{"jsonrpc": "2.0", "method": method})
}

// callTool calls a tool and returns the raw result object.
func (c *rawClient) callTool(name string, args map[string]any) (toolResult, []byte) {
	c.t.Helper()
	raw, _ := c.post(map[string]any{"jsonrpc": "2.0", "id": c.id(), "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  any             `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil || msg.Error != nil {
		c.t.Fatalf("tools/call %s: %v %s", name, err, raw)
	}
	var res toolResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		c.t.Fatal(err)
	}
	return res, msg.Result
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (c *rawClient) openGET() {
	ctx, cancel := context.WithCancel(context.Background())
	req := c.request(http.MethodGet, nil).WithContext(ctx)
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("GET: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.t.Fatalf("GET status %d: %s", resp.StatusCode, b)
	}
	c.cancelGET = cancel
	c.getDone = make(chan struct{})
	go func() {
		defer close(c.getDone)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				c.events <- []byte(d)
			}
		}
	}()
}

// closeGET ends the event stream, as a client that vanishes does.
func (c *rawClient) closeGET() {
	if c.cancelGET != nil {
		c.cancelGET()
		<-c.getDone
		c.cancelGET = nil
	}
}

func (c *rawClient) close() {
	c.closeGET()
	c.hc.CloseIdleConnections()
}

// next returns the next notification of method on the event stream,
// skipping others.
func (c *rawClient) next(method string, within time.Duration) []byte {
	c.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case ev := <-c.events:
			var m struct {
				Method string `json:"method"`
			}
			_ = json.Unmarshal(ev, &m)
			if m.Method == method {
				return ev
			}
		case <-timer.C:
			c.t.Fatalf("no %s within %v", method, within)
			return nil
		}
	}
}

// none checks that no notification of method arrives within d.
func (c *rawClient) none(method string, d time.Duration) {
	c.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-c.events:
			if bytes.Contains(ev, []byte(`"method":"`+method+`"`)) {
				c.t.Fatalf("unexpected %s: %s", method, ev)
			}
		case <-timer.C:
			return
		}
	}
}

// contextFrom decodes an ide/contextUpdate message, refusing nulls.
func contextFrom(t *testing.T, msg []byte) ide.Context {
	t.Helper()
	if bytes.Contains(msg, []byte("null")) {
		t.Fatalf("context update carries a null: %s", msg)
	}
	var m struct {
		Params ide.Context `json:"params"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	return m.Params
}

// writeFile makes a file on disk for the context tests.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// httpDo sends a raw request to the server with the given headers.
func httpDo(t *testing.T, srv *Server, method, path string, hdr map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", srv.Port(), path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}
