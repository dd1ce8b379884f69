package extmcp

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestRemoteAsksInResult: a remote server of 2026-07-28 asks its
// question in its call's result (input_required, specification
// 2026-07-28, basic/patterns/mrtr); the SDK's client answers it with
// gemkit's Ask under the call's context, so the question goes, labelled,
// to the client of the call, and the retry brings the server the
// person's answer. For a client that declares no elicitation the call
// fails in gemkit's words.
func TestRemoteAsksInResult(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if v := req.ProtocolVersion(); v < "2026-07-28" {
			// The SDK would then ask in an elicitation/create of its own.
			return nil, fmt.Errorf("the request is of %s, before input_required", v)
		}
		if req.Params.RequestState == "" {
			return &mcp.CallToolResult{RequestState: "asked-1", InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{
				Mode: "form", Message: "Which colour?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"colour":{"type":"string"}}}`)}}}, nil
		}
		b, _ := json.Marshal(req.Params.InputResponses["q"])
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.RequestState + " " + string(b)}}}, nil
	})
	// The SDK serves 2026-07-28 only without sessions.
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)

	m := NewManager(Config{Timeout: 30 * time.Second, Environ: []string{"HOME=/nonexistent"}, Capabilities: filepath.Join(t.TempDir(), "caps.json")})
	t.Cleanup(m.Close)
	sp := Spec{Extension: "far", Server: "srv", URL: ts.URL, Transport: TransportHTTP,
		Widening: extension.Widening{Hosts: []string{strings.TrimPrefix(ts.URL, "http://")}}}
	m.Sync([]Spec{sp})

	var mu sync.Mutex
	var asked []Question
	c := Client{Name: "asking", Modes: Modes{Form: true}, Ask: func(_ context.Context, q Question) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		return Answer{Action: "accept", Content: json.RawMessage(`{"colour":"red"}`)}, nil
	}}
	raw, err := m.Call(WithClient(context.Background(), c), sp.Key(), "ask", json.RawMessage(`{}`), nil)
	if err != nil || !strings.Contains(string(raw), `asked-1 {\"action\":\"accept\",\"content\":{\"colour\":\"red\"}}`) {
		t.Errorf("call: %s %v", raw, err)
	}
	want := `The MCP server "srv" of the extension "far" asks (its own question, not gemkit's):` + "\nWhich colour?"
	if len(asked) != 1 || asked[0].Message != want {
		t.Errorf("asked %+v", asked)
	}

	raw, err = m.Call(WithClient(context.Background(), Client{Name: "silent"}), sp.Key(), "ask", json.RawMessage(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "gemkit did not pass on the question the extension far's MCP server srv asked the person: the client that made the call (silent) declares no elicitation") {
		t.Errorf("not declared: %s %v", raw, err)
	}
}
