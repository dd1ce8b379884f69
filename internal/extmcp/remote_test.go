package extmcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extension"
)

// remoteServer is the go-sdk's own server with a tool, a prompt, a
// resource that can be subscribed to and a log, served on loopback over
// Streamable HTTP (/mcp) and SSE (/sse). headers are those of the last
// request.
type remoteServer struct {
	url     string
	srv     *mcp.Server
	mu      sync.Mutex
	headers http.Header
	deletes int // sessions ended (DELETE)
}

func newRemoteServer(t *testing.T) *remoteServer {
	rs := &remoteServer{}
	rs.srv = mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(rs.srv, &mcp.Tool{Name: "hello"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "said hello"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from afar"}}}, nil, nil
	})
	rs.srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "greetings"}}}}, nil
	})
	rs.srv.AddResource(&mcp.Resource{URI: "note://1", Name: "note"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note one"}}}, nil
	})
	get := func(*http.Request) *mcp.Server { return rs.srv }
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(get, nil))
	mux.Handle("/sse", mcp.NewSSEHandler(get, nil))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.headers = r.Header.Clone()
		if r.Method == http.MethodDelete {
			rs.deletes++
		}
		rs.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	rs.url = ts.URL
	return rs
}

func (rs *remoteServer) header(name string) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.headers.Get(name)
}

// TestRemoteServers: a remote server is connected to over Streamable
// HTTP, SSE, or (url alone) Streamable HTTP then SSE, with the entry's
// headers expanded from declared settings only; its catalog is listed,
// its tool, prompt and resource used (its results without the hop's
// resultType), its log (at the level set before it started) and a
// subscription's resources/updated passed on; one that cannot be reached is a failure naming it and its URL.
func TestRemoteServers(t *testing.T) {
	t.Parallel()
	rs := newRemoteServer(t)
	for _, tc := range []struct {
		name, path, transport string
	}{
		{"http", "/mcp", TransportHTTP},
		{"sse", "/sse", TransportSSE},
		{"url alone, an SSE server", "/sse", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(Config{Timeout: 10 * time.Second, Environ: []string{"HOME=/nonexistent", "SECRET=mine"}, Capabilities: filepath.Join(t.TempDir(), "caps.json")})
			t.Cleanup(m.Close)
			events := make(chan Event, 16)
			m.Listen(func(ev Event) { events <- ev })
			sp := Spec{Extension: "far", Server: "srv", URL: rs.url + tc.path, Transport: tc.transport,
				Headers:  map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Secret": "[$SECRET]"},
				Settings: map[string]string{"TOKEN": "t0k"},
				// The test's server is on loopback, which gemkit reaches
				// only when allowed by host and port.
				Widening: extension.Widening{Hosts: []string{strings.TrimPrefix(rs.url, "http://")}}}
			m.SetLevel(context.Background(), "info")
			m.Sync([]Spec{sp})
			c, failed := m.Catalog(context.Background())
			if len(failed) > 0 {
				t.Fatal(failed[0].Err)
			}
			if len(c.Tools) != 1 || len(c.Prompts) != 1 || len(c.Resources) != 1 || c.Resources[0].ID != "note://1" {
				t.Fatalf("catalog %+v", c)
			}
			if got := rs.header("Authorization"); got != "Bearer t0k" {
				t.Errorf("Authorization %q", got)
			}
			if got := rs.header("X-Secret"); got != "[]" {
				t.Errorf("X-Secret %q: the person's environment reached a header", got)
			}
			ctx := context.Background()
			raw, err := m.Call(ctx, sp.Key(), "hello", json.RawMessage(`{}`), nil)
			if err != nil || !strings.Contains(string(raw), "hello from afar") || strings.Contains(string(raw), "resultType") {
				t.Errorf("call: %s %v", raw, err)
			}
			if raw, err := m.GetPrompt(ctx, sp.Key(), "greet", nil); err != nil || !strings.Contains(string(raw), "greetings") {
				t.Errorf("prompt: %s %v", raw, err)
			}
			if raw, err := m.ReadResource(ctx, sp.Key(), "note://1"); err != nil || !strings.Contains(string(raw), "note one") {
				t.Errorf("read: %s %v", raw, err)
			}
			if err := m.Subscribe(ctx, sp.Key(), "note://1"); err != nil {
				t.Errorf("subscribe: %v", err)
			}
			if err := rs.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "note://1"}); err != nil {
				t.Fatal(err)
			}
			var sawLog, sawUpdate bool
			for deadline := time.After(30 * time.Second); !sawLog || !sawUpdate; {
				select {
				case ev := <-events:
					sawLog = sawLog || ev.Method == "notifications/message" && strings.Contains(string(ev.Params), "said hello")
					sawUpdate = sawUpdate || ev.Method == "notifications/resources/updated" && strings.Contains(string(ev.Params), "note://1")
				case <-deadline:
					t.Fatalf("log passed on: %v, resources/updated passed on: %v", sawLog, sawUpdate)
				}
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		m := NewManager(Config{Timeout: 5 * time.Second})
		t.Cleanup(m.Close)
		m.Sync([]Spec{{Extension: "far", Server: "gone", URL: "http://127.0.0.1:9/mcp", Transport: TransportHTTP,
			Widening: extension.Widening{Hosts: []string{"127.0.0.1:9"}}}})
		_, failed := m.Catalog(context.Background())
		if len(failed) != 1 || !strings.HasPrefix(failed[0].Err.Error(), "extension far's MCP server gone could not be reached at http://127.0.0.1:9/mcp: ") {
			t.Errorf("failed %v", failed)
		}
	})
}

// TestProgressEndsWithCall: the progress of a call is passed on while the
// call is under way, never after its result: a server's progress for
// the call's token once it answered (here, then a log line) is dropped,
// as the client no longer knows the token. It was passed on for a
// second after the result.
func TestProgressEndsWithCall(t *testing.T) {
	t.Parallel()
	after, sent := make(chan struct{}), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "steps", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "steps"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		for i := 1; i <= 3; i++ {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: 3})
		}
		go func() {
			<-after
			req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 4, Total: 3})
			req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: "progress sent after the result"})
			close(sent)
		}()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)

	m := NewManager(Config{Timeout: 10 * time.Second, Capabilities: filepath.Join(t.TempDir(), "caps.json")})
	t.Cleanup(m.Close)
	logged := make(chan struct{}, 1)
	m.Listen(func(ev Event) {
		if ev.Method == "notifications/message" && strings.Contains(string(ev.Params), "after the result") {
			logged <- struct{}{}
		}
	})
	sp := Spec{Extension: "far", Server: "srv", URL: ts.URL, Transport: TransportHTTP,
		Widening: extension.Widening{Hosts: []string{strings.TrimPrefix(ts.URL, "http://")}}}
	m.SetLevel(context.Background(), "info")
	m.Sync([]Spec{sp})
	var mu sync.Mutex
	var got []float64
	raw, err := m.Call(context.Background(), sp.Key(), "steps", json.RawMessage(`{}`), func(p, _ float64, _ string) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	if err != nil || !strings.Contains(string(raw), "done") {
		t.Fatalf("call: %s %v", raw, err)
	}
	close(after)
	<-sent
	select {
	case <-logged:
	case <-time.After(30 * time.Second):
		t.Fatal("the server's log line after the result was not passed on")
	}
	mu.Lock()
	defer mu.Unlock()
	// What the SDK hands on after the answer (HTTP) is dropped too: of
	// 1, 2 and 3, those that came before it.
	for _, p := range got {
		if p > 3 {
			t.Errorf("progress %v passed on after the call's result", got)
		}
	}
}

// TestCloseEndsRemoteCall: a call a remote server holds ends when the
// manager closes (gemkit mcp ending), told as cut short, rather than
// keep Close waiting up to the call's own bound: the SDK's Close waits
// for the requests under way, so the connection is ended first. The
// session's end (DELETE), which the Go SDK's server answers once the
// held handler is over, waits sessionEndBound, not the SDK's 5 s.
func TestCloseEndsRemoteCall(t *testing.T) {
	t.Parallel()
	rs := newRemoteServer(t)
	held, release := make(chan struct{}), make(chan struct{})
	// Released once the call is over, and before the test's server
	// closes (cleanups run last first), which waits for its handlers;
	// so does the end of the session (Close's DELETE).
	done := sync.OnceFunc(func() { close(release) })
	t.Cleanup(done)
	mcp.AddTool(rs.srv, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		close(held)
		select {
		case <-ctx.Done():
		case <-release:
		}
		return &mcp.CallToolResult{}, nil, nil
	})
	const bound = 20 * time.Second
	m := NewManager(Config{Timeout: bound, Environ: []string{"HOME=/nonexistent"}, Capabilities: filepath.Join(t.TempDir(), "caps.json")})
	sp := Spec{Extension: "far", Server: "srv", URL: rs.url + "/mcp", Transport: TransportHTTP,
		Widening: extension.Widening{Hosts: []string{strings.TrimPrefix(rs.url, "http://")}}}
	m.Sync([]Spec{sp})
	if _, failed := m.Catalog(context.Background()); len(failed) > 0 {
		t.Fatal(failed[0].Err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-held
		began := time.Now()
		m.Close()
		if d := time.Since(began); d >= 5*time.Second {
			t.Errorf("Close took %v: the session's end waited the SDK's whole bound", d.Round(time.Millisecond))
		}
	}()
	began := time.Now()
	raw, err := m.Call(context.Background(), sp.Key(), "hold", json.RawMessage(`{}`), nil)
	done()
	<-closed
	if d := time.Since(began); d >= bound {
		t.Errorf("the call lasted %v, its whole bound: Close waited for it (%s %v)", d.Round(time.Second), raw, err)
	}
	if !errors.Is(err, ErrStopped) {
		t.Errorf("a call cut short by the manager's end is told as %s %v", raw, err)
	}
}

// TestRemoteStopEndsSessionOnce: stopping a connected remote server
// ends its session with one DELETE.
func TestRemoteStopEndsSessionOnce(t *testing.T) {
	t.Parallel()
	rs := newRemoteServer(t)
	m := NewManager(Config{Timeout: 20 * time.Second, Environ: []string{"HOME=/nonexistent"}, Capabilities: filepath.Join(t.TempDir(), "caps.json")})
	sp := Spec{Extension: "far", Server: "srv", URL: rs.url + "/mcp", Transport: TransportHTTP,
		Widening: extension.Widening{Hosts: []string{strings.TrimPrefix(rs.url, "http://")}}}
	m.Sync([]Spec{sp})
	if _, failed := m.Catalog(context.Background()); len(failed) > 0 {
		t.Fatal(failed[0].Err)
	}
	m.Close()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.deletes != 1 {
		t.Fatalf("%d DELETEs, want 1", rs.deletes)
	}
}
