package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// The shapes these tests send are the real servers', each with its
// source beside it. A step answers one request; the server records each
// request's body.

type step func(w http.ResponseWriter, r *http.Request)

type scripted struct {
	*httptest.Server
	mu     sync.Mutex
	steps  []step
	bodies []string
}

func serveSteps(t *testing.T, steps ...step) *scripted {
	t.Helper()
	s := &scripted{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		if n >= len(s.steps) {
			http.Error(w, "no more steps", 599)
			return
		}
		s.steps[n](w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scripted) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// sse answers 200 with body as text/event-stream.
func sse(body string) step {
	return status(200, "text/event-stream", nil, body)
}

func status(code int, contentType string, header http.Header, body string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// reset answers with the start of a stream, then drops the connection.
func reset(start string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		if start != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			io.WriteString(w, start)
			w.(http.Flusher).Flush()
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

const (
	geminiOK = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}` + "\r\n\r\n"
	openaiOK = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
)

func geminiAt(t *testing.T, url string) Model {
	t.Helper()
	m, err := NewGemini(context.Background(), GeminiConfig{Model: "gemini-2.5-flash", APIKey: "k", BaseURL: url, IdleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func openaiAt(t *testing.T, url string) Model {
	t.Helper()
	m, err := NewOpenAI(OpenAIConfig{Model: "m", BaseURL: url + "/v1", IdleTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func modelAt(t *testing.T, url string, openai bool) Model {
	t.Helper()
	if openai {
		return openaiAt(t, url)
	}
	return geminiAt(t, url)
}

var hi = Request{Messages: []Message{{Role: User, Text: "hi"}}}

// TestUnfinishedReplies: a reply that did not finish is an error that
// says so, never an empty success (issue item 2).
func TestUnfinishedReplies(t *testing.T) {
	cases := []struct {
		name   string
		openai bool
		step   step
		words  string
	}{
		// The Gemini API streams candidates without finishReason until the
		// last chunk (Candidate.finishReason: "If empty, the model has not
		// stopped generating"); a stream cut there has none.
		{"gemini no finish reason", false, sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Let me"}]},"index":0}]}` + "\r\n\r\n"),
			"without a finish reason"},
		// FinishReason values of the REST reference; Gemini CLI's
		// geminiChat.ts turns both into InvalidStreamError.
		{"gemini malformed call", false, sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"MALFORMED_FUNCTION_CALL","index":0}]}` + "\r\n\r\n"),
			"MALFORMED_FUNCTION_CALL"},
		{"gemini unexpected tool call", false, sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"UNEXPECTED_TOOL_CALL","index":0}]}` + "\r\n\r\n"),
			"UNEXPECTED_TOOL_CALL"},
		// geminiChat.ts's NO_RESPONSE_TEXT: STOP with no text.
		{"gemini empty reply", false, sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":9}}` + "\r\n\r\n"),
			"empty reply"},
		// llama.cpp's server sends a failure after its 200 as an event
		// with an error field (ggml-org/llama.cpp#14566).
		{"llama.cpp error event", true, sse(`data: {"error":{"code":500,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}` + "\n\n"),
			"exceeds the available context size"},
		// Its 2025 builds, as an error field (coddy-project/coddy-agent#106
		// quotes the bytes), followed by [DONE].
		{"llama.cpp error field", true, sse(`error: {"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}` + "\n\ndata: [DONE]\n\n"),
			"enable context shift"},
		// OpenRouter's mid-stream error ("Handling Errors During
		// Streaming", openrouter.ai/docs/api-reference/streaming): error
		// after id, and finish_reason "error".
		{"openrouter mid-stream error", true, sse(`data: {"id":"cmpl-abc123","object":"chat.completion.chunk","created":1234567890,"model":"gpt-3.5-turbo","provider":"openai","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}` + "\n\n"),
			"Provider disconnected unexpectedly"},
		{"openrouter finish_reason error", true, sse(`data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hal"},"finish_reason":null}]}` + "\n\n" +
			`data: {"id":"gen-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}` + "\n\ndata: [DONE]\n\n"),
			`finish_reason "error"`},
		// A stream cut before its end: chunks, then nothing.
		{"no finish_reason nor [DONE]", true, sse(`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hal"},"finish_reason":null}]}` + "\n\n"),
			"without a finish_reason or [DONE]"},
		// A server or proxy that ignores "stream": true and answers JSON
		// that is no completion.
		{"JSON body to a stream", true, status(200, "application/json", nil, `{"detail":"stream not supported"}`),
			"neither a stream nor a whole chat completion"},
		{"empty reply", true, sse(`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"),
			"empty reply"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := serveSteps(t, c.step)
			m := modelAt(t, srv.URL, c.openai)
			r, err := m.Generate(context.Background(), hi, nil)
			if err == nil || !strings.Contains(err.Error(), c.words) {
				t.Fatalf("reply %+v, error %v; want an error with %q", r, err, c.words)
			}
			// A 400 is final, in the stream as before it (retry.ts's
			// isRetryableError); every other case here is retried.
			if _, again := retryable(err); again == strings.Contains(err.Error(), "HTTP 400") {
				t.Errorf("%v: retried %v", err, again)
			}
		})
	}
	// A whole chat.completion answered to a streaming request is a
	// finished reply.
	srv := serveSteps(t, status(200, "application/json", nil, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`))
	if r, err := openaiAt(t, srv.URL).Generate(context.Background(), hi, nil); err != nil || r.Text != "whole" {
		t.Errorf("a whole completion: %+v %v", r, err)
	}
	// After tool results the model may end without words (geminiChat.ts
	// lets a reply to function responses be empty).
	after := Request{Messages: []Message{{Role: User, Text: "hi"}, {Role: Assistant, Calls: []Call{{ID: "a", Name: "ls", Args: json.RawMessage("{}")}}},
		{Role: Tool, Results: []Result{{CallID: "a", Name: "ls", Text: "x"}}}}}
	srv = serveSteps(t, sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}]}`+"\r\n\r\n"),
		sse(`data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n"))
	if _, err := geminiAt(t, srv.URL).Generate(context.Background(), after, nil); err != nil {
		t.Errorf("gemini, empty after results: %v", err)
	}
	if _, err := openaiAt(t, srv.URL).Generate(context.Background(), after, nil); err != nil {
		t.Errorf("openai, empty after results: %v", err)
	}
}

// TestEmptyTurns: a conversation holding an empty model turn is sent
// without an empty part or a content-less message (issue item 3).
func TestEmptyTurns(t *testing.T) {
	req := Request{Messages: []Message{
		{Role: User, Text: "first"},
		{Role: Assistant},
		{Role: User, Text: "second"},
		{Role: Assistant, Calls: []Call{{ID: "c1", Name: "ls", Args: json.RawMessage("{}")}}},
		{Role: Tool, Results: []Result{{CallID: "c1", Name: "ls", Text: "a.txt"}}},
		{Role: Assistant},
		{Role: User, Text: "third"},
	}}
	srv := serveSteps(t, sse(geminiOK), sse(openaiOK))
	if _, err := geminiAt(t, srv.URL).Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := openaiAt(t, srv.URL).Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	bodies := srv.requests()
	// Gemini answers a part without data with 400 "required oneof field
	// 'data' must have one initialized field" to this and every later
	// request of the conversation.
	var g gRequest
	if err := json.Unmarshal([]byte(bodies[0]), &g); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, c := range g.Contents {
		roles = append(roles, c.Role)
		for _, p := range c.Parts {
			if p.Text == "" && p.FunctionCall == nil && p.FunctionResponse == nil {
				t.Errorf("an empty part in %s", bodies[0])
			}
		}
	}
	if strings.Join(roles, " ") != "user user model user model user" || !strings.Contains(bodies[0], `{"role":"model","parts":[{"text":"(no reply)"}]}`) {
		t.Errorf("contents %v:\n%s", roles, bodies[0])
	}
	// Ollama answers an assistant message without content with 400
	// "invalid message content type: <nil>".
	var o struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal([]byte(bodies[1]), &o); err != nil {
		t.Fatal(err)
	}
	roles = nil
	for _, m := range o.Messages {
		roles = append(roles, m["role"].(string))
		if c, ok := m["content"].(string); !ok || (c == "" && m["tool_calls"] == nil) {
			t.Errorf("a message without content: %v", m)
		}
	}
	if strings.Join(roles, " ") != "user user assistant tool user" {
		t.Errorf("messages %v:\n%s", roles, bodies[1])
	}
}

// TestToolCallStreams: tool calls as each server streams them (issue
// item 4).
func TestToolCallStreams(t *testing.T) {
	cases := []struct {
		name, stream string
		want         []string // name and args of each call
	}{
		// Ollama sends parallel calls whole, each at index 0
		// (ollama/ollama#15457; vercel/ai#14277 handles it by id).
		{"ollama parallel at index 0",
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_a1","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_b2","index":0,"type":"function","function":{"name":"wx_shout","arguments":"{\"text\":\"hi\"}"}}]},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n",
			[]string{`read_file {"path":"a.txt"}`, `wx_shout {"text":"hi"}`}},
		// NVIDIA NIM (MiniMax M2.7) resends the whole name in every
		// fragment (NousResearch/hermes-agent#8259, #12230).
		{"name in every fragment",
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"chatcmpl-tool-9","type":"function","function":{"name":"wx_shout","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"wx_shout","arguments":"{\"text\":"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"wx_shout","arguments":"\"hi\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n",
			[]string{`wx_shout {"text":"hi"}`}},
		// OpenAI's own: id and name once, arguments in pieces.
		{"openai pieces",
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x","type":"function","function":{"name":"ls","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\".\"}"}}]},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n",
			[]string{`ls {"path":"."}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := serveSteps(t, sse(c.stream))
			r, err := openaiAt(t, srv.URL).Generate(context.Background(), hi, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, call := range r.Calls {
				got = append(got, call.Name+" "+string(call.Args))
			}
			if strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("calls %q, want %q", got, c.want)
			}
		})
	}

	t.Run("invalid JSON arguments echoed", func(t *testing.T) {
		// A small model's arguments cut short: what it wrote goes back as
		// written, so it can see its mistake.
		bad := `{"path": "a.txt"`
		srv := serveSteps(t,
			sse(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.txt\""}}]},"finish_reason":"tool_calls"}]}`+"\n\ndata: [DONE]\n\n"),
			sse(openaiOK))
		m := openaiAt(t, srv.URL)
		r, err := m.Generate(context.Background(), hi, nil)
		if err != nil || len(r.Calls) != 1 || r.Calls[0].RawArgs != bad {
			t.Fatalf("%+v %v", r, err)
		}
		next := Request{Messages: []Message{hi.Messages[0], {Role: Assistant, Calls: r.Calls},
			{Role: Tool, Results: []Result{{CallID: "call_1", Name: "read_file", Text: "not JSON", IsError: true}}}}}
		if _, err := m.Generate(context.Background(), next, nil); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(bad)
		if body := srv.requests()[1]; !strings.Contains(body, `"arguments":`+string(want)) {
			t.Errorf("the arguments were not echoed as written:\n%s", body)
		}
	})

	t.Run("gemini 3 ids echoed", func(t *testing.T) {
		// Gemini 3 gives each functionCall an id, with a thoughtSignature,
		// and wants both back (ai.google.dev/gemini-api/docs/function-calling).
		srv := serveSteps(t,
			sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"8f2kq1","name":"read_file","args":{"path":"a.txt"}},"thoughtSignature":"Q2lJQk"}]},"finishReason":"STOP","index":0}]}`+"\r\n\r\n"),
			sse(geminiOK))
		m := geminiAt(t, srv.URL)
		r, err := m.Generate(context.Background(), hi, nil)
		if err != nil || len(r.Calls) != 1 || r.Calls[0].ID != "8f2kq1" {
			t.Fatalf("%+v %v", r, err)
		}
		next := Request{Messages: []Message{hi.Messages[0], {Role: Assistant, Calls: r.Calls},
			{Role: Tool, Results: []Result{{CallID: r.Calls[0].ID, Name: "read_file", Text: "alpha"}}}}}
		if _, err := m.Generate(context.Background(), next, nil); err != nil {
			t.Fatal(err)
		}
		body := srv.requests()[1]
		for _, want := range []string{
			`{"thoughtSignature":"Q2lJQk","functionCall":{"id":"8f2kq1","name":"read_file","args":{"path":"a.txt"}}}`,
			`{"functionResponse":{"id":"8f2kq1","name":"read_file","response":{"output":"alpha"}}}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("request lacks %s:\n%s", want, body)
			}
		}
	})
}

// llamaNoJinja is llama.cpp's answer to a request with tools when its
// server runs without --jinja (see the retry case that uses it).
const llamaNoJinja = `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`

// TestNoTools: every server's way of saying the model has no function
// calling is KindNoTools, which turns the agent to the text protocol
// (issue item 5).
func TestNoTools(t *testing.T) {
	const vllm = `\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`
	cases := []struct {
		name   string
		status int
		body   string
	}{
		// Ollama's.
		{"ollama", 400, `{"error":{"message":"registry.ollama.ai/library/gemma2:2b does not support tools","type":"api_error","param":null,"code":null}}`},
		// llama.cpp's server started without --jinja: a 500.
		{"llama.cpp", 500, llamaNoJinja},
		// vLLM's ErrorResponse before 0.10 (vllm/entrypoints/openai/protocol.py:
		// object "error" at the top).
		{"vllm old", 400, `{"object":"error","message":"` + vllm + `","type":"BadRequestError","param":null,"code":400}`},
		// vLLM's since, OpenAI's shape (the body quoted in
		// gaoch6258/llm-srbench's VLLM_TOOL_CALLING_FIX.md).
		{"vllm new", 400, `{"error":{"message":"` + vllm + `","type":"BadRequestError","param":null,"code":400}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := serveSteps(t, status(c.status, "application/json", nil, c.body))
			_, err := openaiAt(t, srv.URL).Generate(context.Background(), hi, nil)
			if !IsKind(err, KindNoTools) {
				t.Fatalf("%v", err)
			}
		})
	}
}

// TestErrorWords: the words of a failure are true (issue item 6).
func TestErrorWords(t *testing.T) {
	// Gemini's free-tier 429, as Gemini CLI's users quote it: the wait
	// and the quota's name come after the first line.
	quota := `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 38.150708s.","status":"RESOURCE_EXHAUSTED"}}`
	nginx := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
	cases := []struct {
		name   string
		openai bool
		step   step
		want   []string
		not    []string
	}{
		{"whole message", false, status(429, "application/json", nil, quota),
			[]string{"limit: 10, model: gemini-2.5-flash", "Please retry in 38.150708s", "Wait and try again"}, nil},
		// A quota of zero: waiting gives nothing back, whatever wait the
		// answer names.
		{"limit: 0", false, status(429, "application/json", nil, strings.Replace(quota, "limit: 10", "limit: 0", 1)),
			[]string{"limit: 0, model: gemini-2.5-flash", "no quota at all for this model", "waiting will not help", "another model (--model)", "a key of a project that has quota"}, []string{"Wait and try again"}},
		{"limit: 0 on the OpenAI-compatible endpoint", true, status(429, "application/json", nil, `[{"error":{"code":429,"message":"Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro. Please retry in 12.5s.","status":"RESOURCE_EXHAUSTED"}}]`),
			[]string{"no quota at all for this model", "another model (--model)"}, []string{"Wait and try again"}},
		{"html page", true, status(502, "text/html", nil, nginx),
			[]string{"502 Bad Gateway", "HTML page"}, []string{"<html>", "<head>"}},
		{"no doubled period", true, status(400, "application/json", nil, `{"error":{"message":"Invalid value for 'content': expected a string.","type":"invalid_request_error"}}`),
			[]string{"expected a string. This is likely"}, []string{".."}},
		{"reset after data", false, reset(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hal"}]}}]}` + "\r\n\r\n"),
			[]string{"stream broke off", "The server answered"}, []string{"could not be reached", "server is running"}},
		// A 200 that is no stream (a web server or proxy at the base URL):
		// the fix is the URL, not another try or another model.
		{"gemini html 200", false, status(200, "text/html", nil, "<html><head><title>Welcome to nginx!</title></head></html>"),
			[]string{`answered "text/html"`, "not a stream of Gemini API events", "base URL"}, []string{"another model"}},
		{"gemini JSON 200", false, status(200, "application/json", nil, `{"candidates":[{"content":{"role":"model","parts":[{"text":"whole"}]},"finishReason":"STOP"}]}`),
			[]string{`answered "application/json"`, "base URL"}, []string{"another model"}},
		// Google's OpenAI-compatible endpoint (generativelanguage's
		// /v1beta/openai) wraps an error in a list of one, as its clients'
		// tests quote it: the message is shown, not the list's JSON.
		{"openai list-wrapped", true, status(400, "application/json", nil, `[{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}]`),
			[]string{"API key not valid. Please pass a valid API key."}, []string{`[{`, `"status"`}},
		{"openai html 200", true, status(200, "text/html", nil, "<html><head><title>Welcome to nginx!</title></head></html>"),
			[]string{`answered "text/html"`, "base URL"}, []string{"another model"}},
		{"error event after data", true, sse(`data: {"choices":[{"index":0,"delta":{"content":"Hal"}}]}` + "\n\n" + `data: {"error":{"code":503,"message":"The model is overloaded.","type":"server_error"}}` + "\n\n"),
			[]string{"failed while answering", "The model is overloaded"}, []string{"could not be reached", ".."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := serveSteps(t, c.step)
			m := modelAt(t, srv.URL, c.openai)
			_, err := m.Generate(context.Background(), hi, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(err.Error(), w) {
					t.Errorf("%q has %q", err, w)
				}
			}
		})
	}
}

// TestKeepAliveAndIdle: keep-alive comments never fail a stream, however
// many arrive; a silent server times out with words (issue item 6).
func TestKeepAliveAndIdle(t *testing.T) {
	// OpenRouter sends ": OPENROUTER PROCESSING" while a model thinks
	// (openrouter.ai/docs/api-reference/streaming); go-openai failed
	// after 300 such lines.
	pings := strings.Repeat(": OPENROUTER PROCESSING\n\n", 1000)
	slow := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range 6 {
			io.WriteString(w, ": ping\n\n")
			w.(http.Flusher).Flush()
			// A sleep: the pace of the pings over a real connection is
			// what is tested, 1.2 s in all, longer than the idle time,
			// each gap a fifth of it (a loaded machine's scheduler can
			// make a 50 ms pause one of 200 ms).
			time.Sleep(200 * time.Millisecond)
		}
		io.WriteString(w, openaiOK)
	}
	silent := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	srv := serveSteps(t, sse(pings+openaiOK), slow, silent)
	m, _ := NewOpenAI(OpenAIConfig{Model: "m", BaseURL: srv.URL + "/v1", IdleTimeout: time.Second})
	for _, what := range []string{"1000 comments", "pings slower than the whole idle time"} {
		if r, err := m.Generate(context.Background(), hi, nil); err != nil || r.Text != "ok" {
			t.Errorf("%s: %+v %v", what, r, err)
		}
	}
	start := time.Now()
	_, err := m.Generate(context.Background(), hi, nil)
	if err == nil || !strings.Contains(err.Error(), "sent nothing for 1s") || time.Since(start) > 30*time.Second {
		t.Errorf("silent server: %v after %v", err, time.Since(start))
	}
	if _, again := retryable(err); !again {
		t.Errorf("an idle stream is not retried: %v", err)
	}
}

// waits records the waits of a retrying model instead of sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
	on []Wait
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return ctx.Err()
}

func retried(m Model, w *waits, r Retry) Model {
	r.sleep = w.sleep
	r.OnWait = func(x Wait) { w.on = append(w.on, x) }
	return WithRetry(m, r)
}

// TestRetries: retries as Gemini CLI does them (issue item 1).
func TestRetries(t *testing.T) {
	for _, c := range retryCases() {
		t.Run(c.name, func(t *testing.T) { checkRetryCase(t, c) })
	}
	t.Run("mid-stream after backoff", retryMidStreamAfterBackoff)
	t.Run("bounded total wait", retryBoundedTotalWait)
	t.Run("refused, every attempt", retryRefusedEveryAttempt)
	t.Run("first wait over the cap", retryFirstWaitOverCap)
	t.Run("max attempts 1", retryMaxAttempts1)
	t.Run("cancel stops the wait", retryCancelStopsWait)
}

// quotaRPC is Gemini's 429 with google.rpc details, as ai.google.dev's
// rate-limit errors carry them (googleQuotaErrors.ts reads the same
// fields).
func quotaRPC(quotaID, delay, extra string) string {
	return `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.` + extra + `","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"` + quotaID + `","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"10"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + delay + `"}]}}`
}

// The quotas a 429 names, and the answers that fail a request.
const (
	quotaPerMinute = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	quotaPerDay    = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	overloadedBody = `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`
)

// malformedStream is a stream Gemini ends with MALFORMED_FUNCTION_CALL.
var malformedStream = sse(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"MALFORMED_FUNCTION_CALL","index":0}]}` + "\r\n\r\n")

// retryCase is one server's answers to a request and what the retries
// make of them.
type retryCase struct {
	name     string
	openai   bool
	steps    []step
	ok       bool
	requests int
	// the waits, each within [lo, hi]
	waits [][2]time.Duration
}

// retryCases are the failures gemkit retries, or does not, as Gemini
// CLI and the providers' SDKs do.
func retryCases() []retryCase {
	return []retryCase{
		{"RetryInfo 38s", false, []step{status(429, "application/json", nil, quotaRPC(quotaPerMinute, "38s", "")), sse(geminiOK)},
			true, 2, [][2]time.Duration{{38 * time.Second, 38 * time.Second * 12 / 10}}},
		{"per-day quota is final", false, []step{status(429, "application/json", nil, quotaRPC(quotaPerDay, "38s", "")), sse(geminiOK)},
			false, 1, nil},
		{"RetryInfo over 300s is final", false, []step{status(429, "application/json", nil, quotaRPC(quotaPerMinute, "301s", "")), sse(geminiOK)},
			false, 1, nil},
		// googleQuotaErrors.ts: "limit: 0" on a 429 is a quota the project
		// does not have.
		{"limit: 0 is final", false, []step{status(429, "application/json", nil, `{"error":{"code":429,"message":"Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro","status":"RESOURCE_EXHAUSTED"}}`), sse(geminiOK)},
			false, 1, nil},
		// The same with the RetryInfo Gemini sends beside it: the wait it
		// names does not make a quota of zero worth waiting for.
		{"limit: 0 with RetryInfo is final", false, []step{status(429, "application/json", nil, quotaRPC(quotaPerMinute, "38s", `\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro`)), sse(geminiOK)},
			false, 1, nil},
		// Gemini's OpenAI-compatible endpoint says the wait in words only.
		{"Please retry in", true, []step{status(429, "application/json", nil, `[{"error":{"code":429,"message":"You exceeded your current quota. Please retry in 12.5s.","status":"RESOURCE_EXHAUSTED"}}]`), sse(openaiOK)},
			true, 2, [][2]time.Duration{{12500 * time.Millisecond, 15 * time.Second}}},
		// OpenAI's 429 with Retry-After (platform.openai.com's rate-limit
		// guide; OpenAI's Node SDK honours it).
		{"Retry-After", true, []step{status(429, "application/json", http.Header{"Retry-After": {"7"}}, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), sse(openaiOK)},
			true, 2, [][2]time.Duration{{7 * time.Second, 8400 * time.Millisecond}}},
		// 503 "model is overloaded": retry.ts's backoff, 5 s ±30 %, then
		// 10 s ±30 %.
		{"overloaded backoff", false, []step{status(503, "application/json", nil, overloadedBody), status(503, "application/json", nil, overloadedBody), sse(geminiOK)},
			true, 3, [][2]time.Duration{{3500 * time.Millisecond, 6500 * time.Millisecond}, {7 * time.Second, 13 * time.Second}}},
		// llama.cpp's server started without --jinja refuses a request
		// with tools for good: oaicompat_chat_params_parse
		// (tools/server/server-common.cpp) throws std::runtime_error("tools
		// param requires --jinja flag"), which ex_wrapper
		// (tools/server/server.cpp) answers with format_error_response's
		// ERROR_TYPE_SERVER: HTTP 500 and this body.
		{"llama.cpp without --jinja is not retried", true, []step{status(500, "application/json; charset=utf-8", nil, llamaNoJinja), sse(openaiOK)},
			false, 1, nil},
		{"400 is not retried", false, []step{status(400, "application/json", nil, `{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}}`), sse(geminiOK)},
			false, 1, nil},
		// A connection dropped before any answer: retry.ts's ECONNRESET.
		{"reset before data", true, []step{reset(""), sse(openaiOK)},
			true, 2, [][2]time.Duration{{3500 * time.Millisecond, 6500 * time.Millisecond}}},
		// After data: geminiChat.ts's mid-stream retries, 1 s then 2 s.
		{"reset after data", false, []step{reset(`data: {"candidates":[{"content":{"parts":[{"text":"Hal"}]}}]}` + "\r\n\r\n"), reset(`data: {"candidates":[{"content":{"parts":[{"text":"Hal"}]}}]}` + "\r\n\r\n"), sse(geminiOK)},
			true, 3, [][2]time.Duration{{time.Second, time.Second}, {2 * time.Second, 2 * time.Second}}},
		// geminiChat.ts: at most 4 attempts for an invalid stream.
		{"malformed call, 4 attempts", false, []step{malformedStream, malformedStream, malformedStream, malformedStream, sse(geminiOK)},
			false, 4, [][2]time.Duration{{time.Second, time.Second}, {2 * time.Second, 2 * time.Second}, {4 * time.Second, 4 * time.Second}}},
	}
}

// checkRetryCase serves c's answers and checks the reply, the requests
// made and the waits between them.
func checkRetryCase(t *testing.T, c retryCase) {
	srv := serveSteps(t, c.steps...)
	m := modelAt(t, srv.URL, c.openai)
	var w waits
	var streamed strings.Builder
	r, err := retried(m, &w, Retry{}).Generate(context.Background(), hi, func(s string) { streamed.WriteString(s) })
	if (err == nil) != c.ok || len(srv.requests()) != c.requests {
		t.Fatalf("reply %+v, error %v, after %d requests; want ok %v after %d", r, err, len(srv.requests()), c.ok, c.requests)
	}
	if c.ok && r.Text != "ok" {
		t.Errorf("reply %+v", r)
	}
	if !c.ok && c.requests > 1 && !strings.Contains(err.Error(), fmt.Sprintf("after %d attempts", c.requests)) {
		t.Errorf("%v does not say how often it was tried", err)
	}
	if len(w.d) != len(c.waits) || len(w.on) != len(c.waits) {
		t.Fatalf("waits %v, want %v", w.d, c.waits)
	}
	for i, d := range w.d {
		if d < c.waits[i][0] || d > c.waits[i][1] || w.on[i].Delay != d || w.on[i].Attempt != i+1 {
			t.Errorf("wait %d: %v (%+v), want %v", i, d, w.on[i], c.waits[i])
		}
	}
	if c.name == "reset after data" && (!w.on[0].Discarded || streamed.String() != "HalHalok") {
		t.Errorf("the discarded text: %+v, streamed %q", w.on[0], streamed.String())
	}
}

// retryMidStreamAfterBackoff: the mid-stream retries and the backoff
// count their attempts apart, as Gemini CLI's do.
func retryMidStreamAfterBackoff(t *testing.T) {
	// geminiChat.ts's sendMessageStream counts mid-stream attempts in
	// a loop of its own around retryWithBackoff, which starts its 10
	// attempts anew for each: three 503s before a stream that breaks
	// leave all of its mid-stream retries, and the request after the
	// break backs off from 5 s again.
	srv := serveSteps(t, status(503, "application/json", nil, overloadedBody), status(503, "application/json", nil, overloadedBody),
		status(503, "application/json", nil, overloadedBody), malformedStream, status(503, "application/json", nil, overloadedBody), sse(geminiOK))
	var w waits
	r, err := retried(geminiAt(t, srv.URL), &w, Retry{}).Generate(context.Background(), hi, nil)
	if err != nil || r.Text != "ok" || len(srv.requests()) != 6 || len(w.on) != 5 {
		t.Fatalf("reply %+v, error %v, after %d requests and waits %v", r, err, len(srv.requests()), w.d)
	}
	want := []struct {
		attempt, max int
		lo, hi       time.Duration
	}{
		{1, 10, 3500 * time.Millisecond, 6500 * time.Millisecond},
		{2, 10, 7 * time.Second, 13 * time.Second},
		{3, 10, 14 * time.Second, 26 * time.Second},
		{1, 4, time.Second, time.Second},
		{1, 10, 3500 * time.Millisecond, 6500 * time.Millisecond},
	}
	for i, x := range want {
		if o := w.on[i]; o.Attempt != x.attempt || o.MaxAttempts != x.max || o.Delay < x.lo || o.Delay > x.hi {
			t.Errorf("wait %d: %+v, want attempt %d of %d, %v to %v", i, o, x.attempt, x.max, x.lo, x.hi)
		}
	}
}

// retryBoundedTotalWait: a wait past Retry.MaxWait is not waited, and
// the error names the flag that widens it.
func retryBoundedTotalWait(t *testing.T) {
	srv := serveSteps(t, status(429, "application/json", nil, quotaRPC(quotaPerMinute, "200s", "")), status(429, "application/json", nil, quotaRPC(quotaPerMinute, "200s", "")), sse(geminiOK))
	var w waits
	_, err := retried(geminiAt(t, srv.URL), &w, Retry{MaxWait: 5 * time.Minute}).Generate(context.Background(), hi, nil)
	if err == nil || len(w.d) != 1 || len(srv.requests()) != 2 || !strings.Contains(err.Error(), "after 2 attempts") || !strings.Contains(err.Error(), "--retry-max-wait") {
		t.Errorf("%v after waits %v", err, w.d)
	}
}

// retryRefusedEveryAttempt: a server that refuses every connection is
// tried ten times, backing off to the 30 s cap.
func retryRefusedEveryAttempt(t *testing.T) {
	// retry.ts's ECONNREFUSED: a server that is not up yet.
	srv := serveSteps(t)
	url := srv.URL
	srv.Close()
	var w waits
	_, err := retried(openaiAt(t, url), &w, Retry{}).Generate(context.Background(), hi, nil)
	if !IsKind(err, KindNetwork) || len(w.d) != 9 || !strings.Contains(err.Error(), "could not be reached") || !strings.Contains(err.Error(), "after 10 attempts") {
		t.Fatalf("%v after waits %v", err, w.d)
	}
	// 5 s doubling to 30 s, each ±30 %.
	for i, want := range []time.Duration{5, 10, 20, 30, 30, 30, 30, 30, 30} {
		if lo, hi := want*time.Second*7/10, want*time.Second*13/10; w.d[i] < lo || w.d[i] > hi {
			t.Errorf("wait %d: %v, want %v ±30%%", i, w.d[i], want*time.Second)
		}
	}
}

// retryFirstWaitOverCap: a first wait over the cap is kept, not shrunk.
func retryFirstWaitOverCap(t *testing.T) {
	// --retry-delay 1m: the waits start at a minute and do not
	// shrink to the 30 s cap after the first.
	srv := serveSteps(t)
	url := srv.URL
	srv.Close()
	var w waits
	_, err := retried(openaiAt(t, url), &w, Retry{MaxAttempts: 4, InitialDelay: time.Minute}).Generate(context.Background(), hi, nil)
	if err == nil || len(w.d) != 3 {
		t.Fatalf("%v after waits %v", err, w.d)
	}
	for i, d := range w.d {
		if d < 42*time.Second || d > 78*time.Second {
			t.Errorf("wait %d: %v, want 1m ±30%%", i, d)
		}
	}
}

// retryMaxAttempts1: with one attempt, nothing is waited for.
func retryMaxAttempts1(t *testing.T) {
	srv := serveSteps(t, status(503, "application/json", nil, overloadedBody), sse(geminiOK))
	var w waits
	_, err := retried(geminiAt(t, srv.URL), &w, Retry{MaxAttempts: 1}).Generate(context.Background(), hi, nil)
	if !IsKind(err, KindServer) || len(w.d) != 0 {
		t.Errorf("%v after waits %v", err, w.d)
	}
}

// retryCancelStopsWait: a request cancelled during a wait ends at once.
func retryCancelStopsWait(t *testing.T) {
	srv := serveSteps(t, status(429, "application/json", nil, quotaRPC(quotaPerMinute, "60s", "")), sse(geminiOK))
	ctx, cancel := context.WithCancel(context.Background())
	m := WithRetry(geminiAt(t, srv.URL), Retry{OnWait: func(Wait) { cancel() }})
	start := time.Now()
	_, err := m.Generate(ctx, hi, nil)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 30*time.Second || len(srv.requests()) != 1 {
		t.Errorf("%v after %v and %d requests", err, time.Since(start), len(srv.requests()))
	}
}
