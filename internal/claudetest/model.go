// Package claudetest runs the real Claude Code CLI (@anthropic-ai/claude-code,
// pinned in interop/package.json) offline for tests: a scripted Anthropic
// Messages API server of ours stands in for the model (a fake, because the
// real API cannot be reached here), and a private home holds the settings
// that let the CLI start with no prompts.
package claudetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Request is one POST /v1/messages the CLI sent.
type Request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
	// Raw is the whole body, for checks on what the model was told.
	Raw string `json:"-"`
}

// Message is one turn of the conversation; Content is a string or blocks.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// HasTool reports whether the request offers the model tool name: the
// CLI's main conversation does, its side requests (titles, summaries) do
// not.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// LastUser is the text of the last user message: its text blocks and the
// text of its tool results, joined.
func (r *Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(m.Content, &blocks)
		var b strings.Builder
		for _, bl := range blocks {
			b.WriteString(bl.Text)
			if len(bl.Content) > 0 {
				var cs string
				if json.Unmarshal(bl.Content, &cs) == nil {
					b.WriteString(cs)
				} else {
					b.Write(bl.Content)
				}
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	return ""
}

// Reply is the model's answer: Text, or a call of Tool with Input.
type Reply struct {
	Text  string
	Tool  string
	Input any
}

// Model is the scripted Messages API server.
type Model struct {
	URL    string
	script func(*Request) Reply

	mu   sync.Mutex
	reqs []*Request
	n    int
}

// StartModel serves POST /v1/messages on a loopback port until the test
// ends; script answers the main conversation's requests (those offering
// the Write tool), side requests get a short text.
func StartModel(t testing.TB, script func(*Request) Reply) *Model {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{URL: "http://" + ln.Addr().String(), script: script}
	srv := &http.Server{Handler: m}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return m
}

// Requests returns the main conversation's requests so far.
func (m *Model) Requests() []*Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Request(nil), m.reqs...)
}

func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		writeJSON(w, map[string]any{"input_tokens": 100})
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Raw = string(body)
	// The real API refuses a tool name over 64 characters, and Claude Code
	// ends the session on it (anthropics/claude-code#2485 quotes the
	// answer).
	for i, tl := range req.Tools {
		if len(tl.Name) > 64 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"tools.%d.custom.name: String should have at most 64 characters"}}`, i)
			return
		}
	}
	reply := Reply{Text: "ok"}
	if req.HasTool("Write") {
		m.mu.Lock()
		m.reqs = append(m.reqs, &req)
		m.mu.Unlock()
		reply = m.script(&req)
		if n := strings.Count(req.Raw, noMatch); n >= maxSearches && reply.Tool == "ToolSearch" {
			// A script that loads a tool would search for it forever
			// (the test's deadline kills Claude Code without a word).
			reply = Reply{Text: fmt.Sprintf("The model gave up: %d tool searches answered %q; the MCP tools it was told of: %s.", n, noMatch, strings.Join(mcpNames(req.Raw), ", "))}
		}
	}
	m.mu.Lock()
	m.n++
	id := m.n
	m.mu.Unlock()
	if req.Stream {
		writeSSE(w, id, req.Model, reply)
	} else {
		writeJSON(w, message(id, req.Model, reply))
	}
}

func block(id int, r Reply) (map[string]any, string) {
	if r.Tool != "" {
		return map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%04d", id), "name": r.Tool, "input": r.Input}, "tool_use"
	}
	return map[string]any{"type": "text", "text": r.Text}, "end_turn"
}

func message(id int, model string, r Reply) map[string]any {
	b, stop := block(id, r)
	return map[string]any{
		"id": fmt.Sprintf("msg_%04d", id), "type": "message", "role": "assistant", "model": model,
		"content": []any{b}, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10},
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeSSE streams the reply as the Messages API does.
func writeSSE(w http.ResponseWriter, id int, model string, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	ev := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	msg := message(id, model, r)
	msg["content"] = []any{}
	msg["stop_reason"] = nil
	ev("message_start", map[string]any{"type": "message_start", "message": msg})
	b, stop := block(id, r)
	if r.Tool != "" {
		input, _ := json.Marshal(r.Input)
		b["input"] = map[string]any{}
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": b})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": r.Text}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	ev("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// noMatch is what Claude Code's ToolSearch answers when no deferred
// tool matches; after maxSearches such answers a script's search ends.
const (
	noMatch     = "No matching deferred tools found"
	maxSearches = 8
)

// mcpNames are the MCP tools' names in a request, once each.
func mcpNames(raw string) []string {
	names := mcpName().FindAllString(raw, -1)
	slices.Sort(names)
	return slices.Compact(names)
}

var mcpName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`mcp__[A-Za-z0-9_-]+`) })

// LoadTool is the model's call of ToolSearch that loads the MCP tool
// name: Claude Code offers an MCP server's tools deferred, by name only,
// until the model selects them.
func LoadTool(name string) Reply {
	return Reply{Tool: "ToolSearch", Input: map[string]any{"query": "select:" + name, "max_results": 5}}
}

// CallTool is a model's script that loads the MCP tool name, calls it
// with input, and ends with text once the conversation's last user turn
// holds answered (what the tool's answer brings).
func CallTool(name string, input map[string]any, answered, text string) func(*Request) Reply {
	return func(r *Request) Reply {
		switch {
		case strings.Contains(r.LastUser(), answered):
			return Reply{Text: text}
		case r.HasTool(name):
			return Reply{Tool: name, Input: input}
		default:
			return LoadTool(name)
		}
	}
}
