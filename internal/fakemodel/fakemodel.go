// Package fakemodel is a scripted model server for tests: it speaks the
// Gemini API's wire format on a loopback port, answers each model turn
// with the next reply of a script, and records every request so a test
// can assert what a real client (the Gemini CLI, gemkit's agent) sent.
//
// It is a fake because a remote model cannot run here; everything that
// talks to it is real. Point a Gemini client at it with
// GOOGLE_GEMINI_BASE_URL=URL and any API key.
//
// Endpoints, as the Gemini API serves them:
//
//	POST /v1beta/models/MODEL:streamGenerateContent?alt=sse  the next reply as one SSE event
//	POST /v1beta/models/MODEL:generateContent               the next reply as JSON, or, for a
//	     request with generationConfig.responseMimeType application/json (such as the
//	     Gemini CLI's model router), the next AddJSON answer or JSON text built from
//	     its response schema
//	POST /v1beta/models/MODEL:countTokens                   a rough count
//	GET  /v1beta/models                                     Models (models.list)
//
// Anything else is recorded and answered 404 with a Gemini-shaped error.
package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Reply is one scripted model turn: text, function calls, or both.
type Reply struct {
	Text  string
	Calls []FunctionCall
	// Stall holds the answer until the client gives up or the server
	// closes: a model that does not answer, to test cancelling.
	Stall bool
}

// Stalled is a turn the model never answers.
func Stalled() Reply { return Reply{Stall: true} }

// Text is a reply of text only.
func Text(s string) Reply { return Reply{Text: s} }

// Call is a reply that calls one function.
func Call(name string, args map[string]any) Reply {
	return Reply{Calls: []FunctionCall{{Name: name, Args: args}}}
}

// Exhausted is the text answered once the script has no reply left, so a
// client still ends its turn and the test can see it ran out.
const Exhausted = "(fakemodel: the script has no more replies)"

// Request is one recorded request.
type Request struct {
	Method string
	// Path is the URL path, e.g. /v1beta/models/gemini-2.5-pro:streamGenerateContent.
	Path  string
	Query string
	// Model and Action are parsed from a models path ("gemini-2.5-pro",
	// "streamGenerateContent"); empty for other paths.
	Model  string
	Action string
	Header http.Header
	Body   []byte
	// Scripted reports that the request took a reply from the script (a
	// model turn, not a router or countTokens call).
	Scripted bool
}

// Generate decodes the body as a generateContent request.
func (r Request) Generate() (GenerateRequest, error) {
	var g GenerateRequest
	err := json.Unmarshal(r.Body, &g)
	return g, err
}

// IsJSONCall reports a generateContent call that asks for JSON output
// (a structured call, such as the router's).
func (r Request) IsJSONCall() bool {
	g, err := r.Generate()
	return err == nil && g.wantsJSON()
}

// GenerateRequest is the part of a generateContent request tests look at.
type GenerateRequest struct {
	Contents          []Content         `json:"contents"`
	SystemInstruction *Content          `json:"systemInstruction,omitempty"`
	Tools             []json.RawMessage `json:"tools,omitempty"`
	GenerationConfig  map[string]any    `json:"generationConfig,omitempty"`
}

func (g GenerateRequest) wantsJSON() bool {
	mt, _ := g.GenerationConfig["responseMimeType"].(string)
	return mt == "application/json"
}

// Text joins every text part of the request: system instruction and
// contents, in order.
func (g GenerateRequest) Text() string {
	var b strings.Builder
	if g.SystemInstruction != nil {
		for _, p := range g.SystemInstruction.Parts {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
	}
	for _, c := range g.Contents {
		for _, p := range c.Parts {
			b.WriteString(p.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// FunctionResponses lists every function response in the contents.
func (g GenerateRequest) FunctionResponses() []FunctionResponse {
	var out []FunctionResponse
	for _, c := range g.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out = append(out, *p.FunctionResponse)
			}
		}
	}
	return out
}

// FunctionNames lists the names of the function declarations offered.
func (g GenerateRequest) FunctionNames() []string {
	var out []string
	for _, raw := range g.Tools {
		var t struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		}
		if json.Unmarshal(raw, &t) == nil {
			for _, f := range t.FunctionDeclarations {
				out = append(out, f.Name)
			}
		}
	}
	return out
}

// Content is one turn of a conversation.
type Content struct {
	Role  string `json:"role,omitempty"`
	Parts []Part `json:"parts"`
}

// Part is one part of a turn.
type Part struct {
	Text             string            `json:"text,omitempty"`
	FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
}

// FunctionCall is the model asking for a function (tool) call.
type FunctionCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// FunctionResponse is a client's answer to a function call.
type FunctionResponse struct {
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

// Server is a running scripted model server on a loopback port.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT.
	URL string

	mu       sync.Mutex
	script   []Reply
	jsonText []string
	requests []Request
	srv      *http.Server
	ln       net.Listener
}

// Start starts a server that answers model turns with script, in order.
func Start(script ...Reply) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Add appends replies to the script.
func (s *Server) Add(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// AddJSON queues answers (JSON text) for structured calls, used in order
// before answers built from the request's schema.
func (s *Server) AddJSON(texts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jsonText = append(s.jsonText, texts...)
}

// Requests returns a copy of every request so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Turns returns the requests that took a reply from the script (model
// turns), in order.
func (s *Server) Turns() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Scripted {
			out = append(out, r)
		}
	}
	return out
}

// Left is how many scripted replies have not been used.
func (s *Server) Left() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/"); ok {
		req.Model, req.Action, _ = strings.Cut(rest, ":")
	}
	var g GenerateRequest
	decodeErr := json.Unmarshal(body, &g)
	isTurn := r.Method == http.MethodPost && decodeErr == nil &&
		(req.Action == "streamGenerateContent" || (req.Action == "generateContent" && !g.wantsJSON()))
	var reply Reply
	jsonAnswer := ""
	s.mu.Lock()
	if r.Method == http.MethodPost && decodeErr == nil && req.Action == "generateContent" && g.wantsJSON() && len(s.jsonText) > 0 {
		jsonAnswer, s.jsonText = s.jsonText[0], s.jsonText[1:]
	}
	if isTurn {
		req.Scripted = true
		if len(s.script) > 0 {
			reply, s.script = s.script[0], s.script[1:]
		} else {
			reply = Text(Exhausted)
		}
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if reply.Stall {
		<-r.Context().Done()
		return
	}

	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1beta/models":
		writeJSON(w, map[string]any{"models": Models})
	case r.Method != http.MethodPost || req.Model == "":
		writeError(w, http.StatusNotFound, "fakemodel does not serve "+r.Method+" "+r.URL.Path)
	case req.Action == "countTokens":
		writeJSON(w, map[string]any{"totalTokens": len(body) / 4})
	case decodeErr != nil:
		writeError(w, http.StatusBadRequest, "fakemodel: the body is not a generateContent request: "+decodeErr.Error())
	case req.Action == "streamGenerateContent":
		w.Header().Set("Content-Type", "text/event-stream")
		data, _ := json.Marshal(response(req.Model, reply, len(body)))
		fmt.Fprintf(w, "data: %s\r\n\r\n", data)
	case req.Action == "generateContent" && g.wantsJSON() && jsonAnswer != "":
		writeJSON(w, response(req.Model, Text(jsonAnswer), len(body)))
	case req.Action == "generateContent" && g.wantsJSON():
		schema := g.GenerationConfig["responseJsonSchema"]
		if schema == nil {
			schema = g.GenerationConfig["responseSchema"]
		}
		text, _ := json.Marshal(FromSchema(schema))
		writeJSON(w, response(req.Model, Text(string(text)), len(body)))
	case req.Action == "generateContent":
		writeJSON(w, response(req.Model, reply, len(body)))
	default:
		writeError(w, http.StatusNotFound, "fakemodel does not serve the action "+req.Action)
	}
}

// Models is the list GET /v1beta/models answers (the Gemini API's
// models.list): two models that generate text and one that only embeds.
var Models = []map[string]any{
	{"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash", "supportedGenerationMethods": []string{"generateContent", "countTokens"}},
	{"name": "models/gemini-2.5-pro", "displayName": "Gemini 2.5 Pro", "description": "The most capable.", "supportedGenerationMethods": []string{"generateContent", "countTokens"}},
	{"name": "models/text-embedding-004", "displayName": "Text Embedding 004", "supportedGenerationMethods": []string{"embedContent"}},
}

// response is a generateContent response carrying reply.
func response(model string, reply Reply, promptBytes int) map[string]any {
	parts := []any{}
	if reply.Text != "" {
		parts = append(parts, map[string]any{"text": reply.Text})
	}
	for _, c := range reply.Calls {
		args := c.Args
		if args == nil {
			args = map[string]any{}
		}
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
	}
	prompt, out := promptBytes/4, len(reply.Text)/4+1
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": out, "totalTokenCount": prompt + out},
		"modelVersion":  model,
	}
}

// FromSchema returns the smallest value that fits a JSON schema (or the
// Gemini API's OpenAPI-style schema, with upper-case types): an object
// with every property filled in, an enum's first value, "", 0, false or
// []; a number without a minimum is 1. It is how structured calls are answered without a script.
func FromSchema(schema any) any {
	m, ok := schema.(map[string]any)
	if !ok {
		return map[string]any{}
	}
	if enum, ok := m["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := m["type"].(string)
	if list, ok := m["type"].([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch strings.ToLower(typ) {
	case "string":
		return ""
	case "number", "integer":
		if v, ok := m["minimum"].(float64); ok {
			return v
		}
		// Validators behind schemas often want a positive number (the
		// Gemini CLI router's score is 1 to 100).
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	out := map[string]any{}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			out[k] = FromSchema(v)
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b.Bytes())
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": http.StatusText(code)}})
}
