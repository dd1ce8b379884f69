package extmcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// completingServer is a loopback Streamable HTTP MCP server with a
// prompt; with complete, it completes its argument (and declares
// completions). starts counts its initialize requests.
func completingServer(t *testing.T, complete bool) (url string, starts *atomic.Int32) {
	t.Helper()
	var opts *mcp.ServerOptions
	if complete {
		opts = &mcp.ServerOptions{CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			p := req.Params
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{
				Values: []string{p.Ref.Type + " " + p.Ref.Name + p.Ref.URI + " " + p.Argument.Name + "=" + p.Argument.Value + "ada"}}}, nil
		}}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "completing", Version: "1"}, opts)
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	starts = &atomic.Int32{}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				starts.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", starts
}

// TestCompletions: completion/complete reaches the server with the ref
// as the server names it, and its answer comes back; a server that does
// not declare completions is an error in words. Completions says whether
// a server offers them: nothing known before a server starts, then what
// it declared, and, in another Manager (another gemkit mcp) that has not
// started it, what the capabilities file (0600) kept of it, while it is
// started the same way.
func TestCompletions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	caps := filepath.Join(t.TempDir(), "share", "gemkit", "server-capabilities.json")
	manager := func() *Manager {
		m := NewManager(Config{Timeout: 10 * time.Second, Environ: []string{}, Capabilities: caps})
		t.Cleanup(m.Close)
		return m
	}
	url, starts := completingServer(t, true)
	plainURL, _ := completingServer(t, false)
	// Both on loopback, allowed by host and port.
	allow := extension.Widening{Hosts: []string{strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"), strings.TrimPrefix(strings.TrimSuffix(plainURL, "/mcp"), "http://")}}
	sp := Spec{Extension: "far", Server: "srv", URL: url, Transport: TransportHTTP, Widening: allow}
	plain := Spec{Extension: "far", Server: "plain", URL: plainURL, Transport: TransportHTTP, Widening: allow}

	m := manager()
	m.Sync([]Spec{sp, plain})
	if m.Completions() {
		t.Error("Completions before any server started")
	}
	if _, failed := m.Catalog(ctx); len(failed) > 0 {
		t.Fatalf("catalog: %v", failed[0].Err)
	}
	if !m.Completions() {
		t.Error("no Completions once the server that declares them started")
	}
	raw, err := m.Complete(ctx, sp.Key(), mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "greet"}, Name: "who", Value: "a"})
	var res struct {
		Completion struct{ Values []string }
		ResultType string
	}
	if err != nil || json.Unmarshal(raw, &res) != nil || strings.Join(res.Completion.Values, ",") != "ref/prompt greet who=aada" || res.ResultType != "" {
		t.Errorf("Complete: %s %v", raw, err)
	}
	raw, err = m.Complete(ctx, sp.Key(), mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefResource, URI: "note://{id}"}, Name: "id", Value: "7"})
	if err != nil || !strings.Contains(string(raw), "ref/resource note://{id} id=7ada") {
		t.Errorf("Complete of a resource template: %s %v", raw, err)
	}
	_, err = m.Complete(ctx, plain.Key(), mcpclient.Completion{Ref: mcpclient.Ref{Type: mcpclient.RefPrompt, Name: "greet"}, Name: "who"})
	if err == nil || !strings.Contains(err.Error(), "extension far's MCP server plain failed to answer completion/complete of the argument who of the prompt greet: it does not offer completions") {
		t.Errorf("Complete of a server without completions: %v", err)
	}
	if fi, err := os.Stat(caps); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the capabilities file: %v %v", fi, err)
	}

	// Another gemkit mcp knows without starting the server.
	before := starts.Load()
	other := manager()
	other.Sync([]Spec{plain, sp})
	if !other.Completions() || starts.Load() != before {
		t.Errorf("Completions from the file: %v (the server was started %d times more)", other.Completions(), starts.Load()-before)
	}
	// Started another way, it is not taken to offer them.
	moved := sp
	moved.URL = plainURL
	other.Sync([]Spec{moved})
	if other.Completions() {
		t.Error("Completions of a server started another way than the one the file knows")
	}
	// The file holds no setting's value.
	sp.Settings = map[string]string{"TOKEN": "s3cret-value"}
	m.Sync([]Spec{sp})
	if _, failed := m.Catalog(ctx); len(failed) > 0 {
		t.Fatal(failed[0].Err)
	}
	if b, _ := os.ReadFile(caps); strings.Contains(string(b), "s3cret") {
		t.Errorf("the capabilities file holds a setting's value:\n%s", b)
	}
}
