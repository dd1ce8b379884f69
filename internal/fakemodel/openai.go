package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// OpenAIServer is a scripted model server speaking the OpenAI
// chat-completions wire format (as Ollama, llama.cpp and vLLM serve it),
// with the same script and recording as Server. Point an OpenAI client at
// URL+"/v1".
//
//	POST /v1/chat/completions  the next reply: an SSE stream of chunks when
//	     "stream" is true (text in pieces of a few characters, then the
//	     tool calls, then [DONE]), else one chat.completion object
type OpenAIServer struct {
	// URL is http://127.0.0.1:PORT (without /v1).
	URL string

	mu         sync.Mutex
	noTools    bool
	noToolsMsg string
	// noToolsStatus and noToolsBody answer a request with tools as a
	// server's own words, byte for byte (RefuseToolsAs).
	noToolsStatus int
	noToolsBody   string
	script        []openAITurn
	requests      []Request
	srv           *http.Server
	stalled       chan struct{}
}

type openAITurn struct {
	reply  Reply
	status int    // an HTTP error instead of the reply
	msg    string // its message
	body   string // its whole body, when not OpenAI's error shape
	finish string // finish_reason; "" is stop or tool_calls
	stall  bool   // send the first piece, then hang until the client goes
}

// StartOpenAI starts an OpenAI-format server answering with script.
func StartOpenAI(script ...Reply) (*OpenAIServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &OpenAIServer{URL: "http://" + ln.Addr().String(), stalled: make(chan struct{}, 16)}
	s.Add(script...)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *OpenAIServer) Close() error { return s.srv.Close() }

// Add appends replies to the script.
func (s *OpenAIServer) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range replies {
		s.script = append(s.script, openAITurn{reply: r})
	}
}

// RefuseTools makes the server answer every request that offers tools
// with 400 "does not support tools", as Ollama does for a model without
// function calling.
func (s *OpenAIServer) RefuseTools() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noTools = true
}

// RefuseToolsWith is RefuseTools with another server's words, such as
// vLLM's without --enable-auto-tool-choice.
func (s *OpenAIServer) RefuseToolsWith(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noTools, s.noToolsMsg = true, msg
}

// RefuseToolsAs is RefuseTools with another server's status and whole
// body (application/json), such as llama.cpp's 500 without --jinja.
func (s *OpenAIServer) RefuseToolsAs(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noTools, s.noToolsStatus, s.noToolsBody = true, status, body
}

// AddError appends a turn answered with an HTTP error in OpenAI's shape.
func (s *OpenAIServer) AddError(status int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, openAITurn{status: status, msg: msg})
}

// AddFinish appends a reply ending with finish_reason (such as "length"
// or "content_filter").
func (s *OpenAIServer) AddFinish(r Reply, finish string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, openAITurn{reply: r, finish: finish})
}

// AddStall appends a turn that streams the first piece of r's text and
// then sends nothing more until the client goes away; Stalled receives
// once it has.
func (s *OpenAIServer) AddStall(r Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, openAITurn{reply: r, stall: true})
}

// Stalled receives each time a stalled turn has sent its first piece.
func (s *OpenAIServer) Stalled() <-chan struct{} { return s.stalled }

// Requests returns a copy of every request so far, in arrival order.
func (s *OpenAIServer) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Left is how many scripted turns have not been used.
func (s *OpenAIServer) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// ChatRequest is the part of a chat-completions request tests look at.
type ChatRequest struct {
	Model     string           `json:"model"`
	Messages  []map[string]any `json:"messages"`
	Tools     []map[string]any `json:"tools"`
	Stream    bool             `json:"stream"`
	MaxTokens int              `json:"max_tokens"`
}

// Chat decodes the body as a chat-completions request.
func (r Request) Chat() (ChatRequest, error) {
	var c ChatRequest
	err := json.Unmarshal(r.Body, &c)
	return c, err
}

// Text joins the text content of every message, in order.
func (c ChatRequest) Text() string {
	var b strings.Builder
	for _, m := range c.Messages {
		if s, ok := contentText(m["content"]); ok {
			b.WriteString(s)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// contentText is a message's text: a string, or the text parts of an
// array of content parts (as Qwen Code sends them), joined by newlines.
func contentText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case []any:
		var parts []string
		for _, part := range v {
			if p, ok := part.(map[string]any); ok && p["type"] == "text" {
				s, _ := p["text"].(string)
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n"), len(parts) > 0
	}
	return "", false
}

// ToolNames lists the names of the functions offered.
func (c ChatRequest) ToolNames() []string {
	var out []string
	for _, t := range c.Tools {
		if f, ok := t["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// ToolResults lists the content of every tool message, in order.
func (c ChatRequest) ToolResults() []string {
	var out []string
	for _, m := range c.Messages {
		if m["role"] == "tool" {
			s, _ := contentText(m["content"])
			out = append(out, s)
		}
	}
	return out
}

func (s *OpenAIServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	var c ChatRequest
	decodeErr := json.Unmarshal(body, &c)
	isTurn := r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" && decodeErr == nil
	turn := openAITurn{reply: Text(Exhausted)}
	s.mu.Lock()
	if isTurn {
		req.Model = c.Model
		req.Scripted = true
		if s.noTools && len(c.Tools) > 0 {
			turn = openAITurn{status: http.StatusBadRequest, msg: "registry.ollama.ai/library/" + c.Model + " does not support tools"}
			if s.noToolsMsg != "" {
				turn.msg = s.noToolsMsg
			}
			if s.noToolsStatus != 0 {
				turn.status, turn.body = s.noToolsStatus, s.noToolsBody
			}
		} else if len(s.script) > 0 {
			turn, s.script = s.script[0], s.script[1:]
		}
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	switch {
	case !isTurn && decodeErr != nil && r.Method == http.MethodPost:
		openAIError(w, http.StatusBadRequest, "fakemodel: the body is not a chat-completions request: "+decodeErr.Error())
	case !isTurn:
		openAIError(w, http.StatusNotFound, "fakemodel does not serve "+r.Method+" "+r.URL.Path)
	case turn.status != 0 && turn.body != "":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(turn.status)
		io.WriteString(w, turn.body)
	case turn.status != 0:
		openAIError(w, turn.status, turn.msg)
	case c.Stream:
		s.stream(w, r, c.Model, turn)
	default:
		writeJSON(w, completion(c.Model, turn))
	}
}

func finishOf(t openAITurn) string {
	switch {
	case t.finish != "":
		return t.finish
	case len(t.reply.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func toolCalls(r Reply, withIndex bool) []any {
	var out []any
	for i, c := range r.Calls {
		args, _ := json.Marshal(c.Args)
		if c.Args == nil {
			args = []byte("{}")
		}
		tc := map[string]any{"id": fmt.Sprintf("call_%d", i+1), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args)}}
		if withIndex {
			tc["index"] = i
		}
		out = append(out, tc)
	}
	return out
}

func completion(model string, t openAITurn) map[string]any {
	msg := map[string]any{"role": "assistant", "content": t.reply.Text}
	if calls := toolCalls(t.reply, false); len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finishOf(t)}},
		"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": len(t.reply.Text)/4 + 1, "total_tokens": 2}}
}

func (s *OpenAIServer) stream(w http.ResponseWriter, r *http.Request, model string, t openAITurn) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any) {
		data, _ := json.Marshal(map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", data)
		if fl != nil {
			fl.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil)
	text := t.reply.Text
	for first := true; text != "" || first; first = false {
		n := min(len(text), 8)
		for n < len(text) && !isRuneStart(text[n]) {
			n++
		}
		if n > 0 {
			send(map[string]any{"content": text[:n]}, nil)
		}
		text = text[n:]
		if t.stall {
			s.stalled <- struct{}{}
			<-r.Context().Done()
			return
		}
	}
	for _, tc := range toolCalls(t.reply, true) {
		send(map[string]any{"tool_calls": []any{tc}}, nil)
	}
	send(map[string]any{}, finishOf(t))
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func openAIError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}})
}
