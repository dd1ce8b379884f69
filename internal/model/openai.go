package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// OpenAIConfig configures an OpenAI-compatible chat-completions endpoint.
type OpenAIConfig struct {
	Model string
	// BaseURL is the endpoint's API root, such as
	// http://127.0.0.1:11434/v1 for Ollama; "" is OpenAI's.
	BaseURL string
	// APIKey is sent as a bearer token; local servers ignore it.
	APIKey     string
	HTTPClient *http.Client
	// IdleTimeout ends a request whose server sends nothing for this long
	// (0: DefaultIdleTimeout).
	IdleTimeout time.Duration
}

// openaiModel speaks chat completions with server-sent events over
// net/http, reading the stream with the same SSE reader as the Gemini
// side. It used the go-openai library before; its stream reader stood in
// the way of every server that is not OpenAI's: it counts keep-alive
// comments and blank lines towards a limit of 300 "empty messages" and
// then fails the stream (OpenRouter sends ": OPENROUTER PROCESSING" for
// as long as a model thinks), finds an error event only when "error" is
// its first key (OpenRouter's mid-stream error comes after "id"), ends a
// stream cut before [DONE] as a normal end, reads a JSON body answered to
// a streaming request as an empty stream, and rewrites requests by model
// name. Owning the 200 lines of the wire is simpler than working around
// each of these.
type openaiModel struct {
	url      string // …/chat/completions
	apiKey   string
	model    string
	endpoint string
	client   *http.Client
	idle     time.Duration
}

// KindNoTools is an endpoint that said the model cannot call functions:
// the agent then speaks the text protocol instead.
const KindNoTools Kind = "no_tools"

// NewOpenAI returns the model of an OpenAI-compatible endpoint. It does
// not contact it.
func NewOpenAI(cfg OpenAIConfig) (Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("no model name: give one with --model or in the config file")
	}
	key := cfg.APIKey
	if key == "" {
		key = "none" // local servers need no key; some proxies want a header
	}
	base := cfg.BaseURL
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the base URL %q is not an http(s) URL", base)
	}
	ep := cfg.BaseURL
	if ep == "" {
		ep = "api.openai.com"
	}
	c := cfg.HTTPClient
	if c == nil {
		c = http.DefaultClient
	}
	return &openaiModel{url: strings.TrimRight(base, "/") + "/chat/completions", apiKey: key, model: cfg.Model,
		endpoint: cfg.Model + " at " + ep, client: c, idle: cfg.IdleTimeout}, nil
}

func (o *openaiModel) Describe() string { return o.endpoint }

// The chat-completions JSON, as much of it as gemkit sends and reads.
type (
	oaRequest struct {
		Model               string      `json:"model"`
		Messages            []oaMessage `json:"messages"`
		Tools               []oaTool    `json:"tools,omitempty"`
		MaxTokens           int         `json:"max_tokens,omitempty"`
		MaxCompletionTokens int         `json:"max_completion_tokens,omitempty"`
		Stream              bool        `json:"stream"`
	}
	oaMessage struct {
		Role string `json:"role"`
		// Content is always sent, "" rather than null or absent: Ollama
		// answers a message without content with 400 "invalid message
		// content type: <nil>".
		Content    string       `json:"content"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
	}
	oaToolCall struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	oaTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description,omitempty"`
			Parameters  map[string]any `json:"parameters,omitempty"`
		} `json:"function"`
	}
	oaChoice struct {
		Index        int      `json:"index"`
		Delta        oaDelta  `json:"delta"`
		Message      *oaDelta `json:"message"` // a whole chat.completion
		FinishReason *string  `json:"finish_reason"`
	}
	oaDelta struct {
		Content   string       `json:"content"`
		Refusal   string       `json:"refusal"`
		ToolCalls []oaToolCall `json:"tool_calls"`
	}
	oaChunk struct {
		Choices []oaChoice `json:"choices"`
		Usage   *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
		Error json.RawMessage `json:"error"`
		// vLLM's older error body: {"object": "error", "message", "code"}.
		Object  string          `json:"object"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
)

// usesCompletionTokens reports OpenAI's reasoning models, which refuse
// max_tokens ("Unsupported parameter: 'max_tokens' … Use
// 'max_completion_tokens' instead"); the local servers read only
// max_tokens.
func usesCompletionTokens(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// openaiMessages maps messages to chat messages. A model turn with
// neither text nor calls is left out: sent, it is an assistant message
// without content, which Ollama refuses.
func openaiMessages(system string, msgs []Message) ([]oaMessage, error) {
	var out []oaMessage
	if system != "" {
		out = append(out, oaMessage{Role: "system", Content: system})
	}
	for _, m := range msgs {
		switch m.Role {
		case User:
			out = append(out, oaMessage{Role: "user", Content: m.Text})
		case Assistant:
			if m.Text == "" && len(m.Calls) == 0 {
				continue
			}
			a := oaMessage{Role: "assistant", Content: m.Text}
			for _, c := range m.Calls {
				tc := oaToolCall{ID: c.ID, Type: "function"}
				tc.Function.Name = c.Name
				tc.Function.Arguments = string(c.Args)
				if c.RawArgs != "" {
					tc.Function.Arguments = c.RawArgs
				}
				a.ToolCalls = append(a.ToolCalls, tc)
			}
			out = append(out, a)
		case Tool:
			for _, r := range m.Results {
				text := r.Text
				if r.IsError {
					text = "Error: " + text
				}
				out = append(out, oaMessage{Role: "tool", Content: text, ToolCallID: r.CallID})
			}
		default:
			return nil, fmt.Errorf("unknown message role %q", m.Role)
		}
	}
	return out, nil
}

func (o *openaiModel) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	body := oaRequest{Model: o.model, Stream: true}
	var err error
	if body.Messages, err = openaiMessages(req.System, req.Messages); err != nil {
		return Reply{}, err
	}
	for _, t := range req.Tools {
		var tool oaTool
		tool.Type = "function"
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, t.Schema
		body.Tools = append(body.Tools, tool)
	}
	if req.MaxOutputTokens > 0 {
		if usesCompletionTokens(o.model) {
			body.MaxCompletionTokens = req.MaxOutputTokens
		} else {
			body.MaxTokens = req.MaxOutputTokens
		}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return Reply{}, fmt.Errorf("encode the request: %w", err)
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("Accept", "text/event-stream")
	header.Set("Authorization", "Bearer "+o.apiKey)
	parent := ctx
	resp, ctx, idle, err := post(ctx, o.client, o.url, o.endpoint, header, payload, o.idle)
	if err != nil {
		return Reply{}, err
	}
	defer idle.stop()
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if parent.Err() != nil {
			return Reply{}, parent.Err()
		}
		return Reply{}, o.httpError(resp, b)
	}
	acc := newAccumulator(onText)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		// A server that ignored "stream": a whole chat.completion, or an
		// error with status 200.
		b, err := io.ReadAll(io.LimitReader(idle.body(resp.Body), maxEvent))
		if err != nil {
			return Reply{}, o.streamFailed(parent, ctx, idle, resp.StatusCode, err)
		}
		if err := o.chunk(acc, b, true); err != nil {
			return Reply{}, err
		}
		if !acc.finished {
			return Reply{}, incomplete(o.endpoint, resp.StatusCode, "the server answered a streaming request with JSON that is neither a stream nor a whole chat completion: "+clip(string(b), 200))
		}
	} else {
		err = readSSE(idle.body(bufio.NewReader(resp.Body)), func(data []byte) error {
			if string(bytes.TrimSpace(data)) == "[DONE]" {
				acc.done = true
				return nil
			}
			return o.chunk(acc, data, false)
		})
		if err != nil {
			var me *Error
			if errors.As(err, &me) {
				return acc.reply(), err
			}
			return acc.reply(), o.streamFailed(parent, ctx, idle, resp.StatusCode, err)
		}
	}
	r := acc.reply()
	switch {
	case acc.finish == "error":
		return r, incomplete(o.endpoint, resp.StatusCode, `the stream ended with finish_reason "error"`)
	case !acc.finished && !acc.done && !acc.any && mt != "text/event-stream":
		return r, notAStream(o.endpoint, resp.StatusCode, resp.Header.Get("Content-Type"), "chat-completion chunks")
	case !acc.finished && !acc.done:
		return r, incomplete(o.endpoint, resp.StatusCode, "the stream ended without a finish_reason or [DONE]")
	case r.Finish == FinishSafety:
		return r, SafetyError(o.endpoint, "finish reason content_filter")
	case len(r.Calls) == 0 && strings.TrimSpace(r.Text) == "" && r.Finish != FinishMaxTokens && !answersResults(req):
		return r, incomplete(o.endpoint, resp.StatusCode, "the model sent an empty reply")
	}
	return r, nil
}

func (o *openaiModel) streamFailed(parent, ctx context.Context, idle *idleWatch, status int, err error) error {
	if parent.Err() != nil {
		return parent.Err()
	}
	return idle.explain(brokenStream(o.endpoint, status, err), ctx)
}

// chunk adds one streamed chunk (or, whole, a chat.completion) to acc.
func (o *openaiModel) chunk(acc *accumulator, data []byte, whole bool) error {
	var c oaChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return &Error{Kind: KindServer, Status: 200, Endpoint: o.endpoint, Err: err, Midstream: true,
			Msg:  "its stream sent something that is not JSON: " + clip(string(data), 80),
			Hint: "Check that the base URL is an OpenAI-compatible API root (…/v1)"}
	}
	if msg, code, ok := oaErrorOf(c); ok {
		// llama.cpp's {"error": {"code": 500, …}} event, OpenRouter's
		// {"id": …, "error": {"code": "server_error", …}} mid-stream.
		e := o.classifyMsg(code, msg, nil, nil)
		if e.Kind == KindNetwork {
			e.Kind, e.Hint = KindServer, "Try again later"
		}
		e.Midstream = true
		return e
	}
	acc.any = true
	if c.Usage != nil && c.Usage.CompletionTokens > 0 {
		acc.r.OutputTokens = c.Usage.CompletionTokens
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if whole && ch.Message != nil {
			d = *ch.Message
		}
		acc.add(d)
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			acc.setFinish(*ch.FinishReason)
		}
	}
	return nil
}

// accumulator builds a reply from stream chunks.
type accumulator struct {
	r      Reply
	onText func(string)
	calls  []*partialCall
	at     map[int]*partialCall // the call each index last opened
	finish string
	// finished: a finish_reason came; done: [DONE] came; any: a chunk
	// that was not an error came.
	finished, done, any bool
}

type partialCall struct {
	index    int
	id, name string
	args     strings.Builder
}

func newAccumulator(onText func(string)) *accumulator {
	return &accumulator{onText: onText, at: map[int]*partialCall{}}
}

func (a *accumulator) add(d oaDelta) {
	if d.Content != "" {
		a.r.Text += d.Content
		if a.onText != nil {
			a.onText(d.Content)
		}
	}
	if d.Refusal != "" {
		a.r.Detail = d.Refusal
	}
	for n, tc := range d.ToolCalls {
		i := n
		if tc.Index != nil {
			i = *tc.Index
		}
		// A fragment with an id of its own opens a new call even at an
		// index already used: Ollama sends parallel calls whole, each at
		// index 0.
		pc := a.at[i]
		if pc == nil || (tc.ID != "" && pc.id != "" && tc.ID != pc.id) {
			pc = &partialCall{index: i}
			a.calls = append(a.calls, pc)
			a.at[i] = pc
		}
		if tc.ID != "" {
			pc.id = tc.ID
		}
		// NVIDIA NIM and Fireworks send the whole name in every fragment;
		// OpenAI sends it once.
		switch name := tc.Function.Name; {
		case name == "" || name == pc.name:
		case pc.name == "":
			pc.name = name
		default:
			pc.name += name
		}
		pc.args.WriteString(tc.Function.Arguments)
	}
}

func (a *accumulator) setFinish(reason string) {
	a.finished, a.finish = true, reason
	switch reason {
	case "stop", "tool_calls", "function_call", "eos":
		a.r.Finish = FinishStop
	case "length":
		a.r.Finish = FinishMaxTokens
	case "content_filter":
		a.r.Finish = FinishSafety
	default:
		a.r.Finish = FinishOther
	}
	if a.r.Detail == "" {
		a.r.Detail = reason
	}
}

// reply is the reply so far, its calls in index order (and, at one
// index, in the order they came).
func (a *accumulator) reply() Reply {
	r := a.r
	calls := append([]*partialCall(nil), a.calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].index < calls[j].index })
	r.Calls = nil
	for n, pc := range calls {
		args := strings.TrimSpace(pc.args.String())
		c := Call{ID: pc.id, Name: pc.name}
		switch {
		case args == "":
			c.Args = json.RawMessage("{}")
		case json.Valid([]byte(args)):
			c.Args = json.RawMessage(args)
		default:
			// Kept as a JSON string for the transcript and the agent's
			// message to the model, and echoed back as written.
			b, _ := json.Marshal(args)
			c.Args, c.RawArgs = b, pc.args.String()
		}
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(n+1)
		}
		r.Calls = append(r.Calls, c)
	}
	if r.Finish == "" && (len(r.Calls) > 0 || r.Text != "") {
		r.Finish = FinishStop
	}
	return r
}

// oaErrorOf reads an error carried in a body or event: {"error": "…"}
// (Ollama), {"error": {"message", "code", "type"}} (OpenAI, llama.cpp,
// OpenRouter, vLLM since 0.10) or {"object": "error", "message", "code"}
// (vLLM before).
func oaErrorOf(c oaChunk) (msg string, code int, ok bool) {
	if len(c.Error) > 0 && string(c.Error) != "null" {
		var s string
		if json.Unmarshal(c.Error, &s) == nil {
			return s, 0, true
		}
		var e struct {
			Message string          `json:"message"`
			Code    json.RawMessage `json:"code"`
			Type    string          `json:"type"`
		}
		if json.Unmarshal(c.Error, &e) == nil {
			msg = e.Message
			if msg == "" {
				msg = e.Type
			}
			if msg == "" {
				msg = string(c.Error)
			}
			return msg, codeOf(e.Code), true
		}
		return string(c.Error), 0, true
	}
	if c.Object == "error" {
		return c.Message, codeOf(c.Code), true
	}
	return "", 0, false
}

// codeOf reads a numeric error code ("model_not_found" and other words
// are 0, read from the message instead).
func codeOf(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "model_not_found" {
			return 404
		}
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return 0
}

// httpError turns a refused request into an *Error with the server's
// words.
func (o *openaiModel) httpError(resp *http.Response, b []byte) error {
	var c oaChunk
	msg, code := "", 0
	// Google's OpenAI-compatible endpoint wraps its error in a list of
	// one, as its native API does: [{"error": {"code": 400, ...}}].
	var list []oaChunk
	if json.Unmarshal(b, &list) == nil && len(list) > 0 {
		c = list[0]
		msg, code, _ = oaErrorOf(c)
	} else if json.Unmarshal(b, &c) == nil {
		var ok bool
		msg, code, ok = oaErrorOf(c)
		if !ok {
			msg = ""
		}
	}
	if msg == "" {
		msg = bodyWords(resp.Status, resp.Header.Get("Content-Type"), b)
	}
	status := resp.StatusCode
	if code == 404 {
		status = 404
	}
	return o.classifyMsg(status, msg, resp.Header, fmt.Errorf("HTTP %s", resp.Status))
}

func (o *openaiModel) classifyMsg(status int, msg string, h http.Header, err error) *Error {
	low := strings.ToLower(msg)
	// Ollama: 400 "… does not support tools"; llama.cpp without --jinja:
	// "tools param requires --jinja flag"; vLLM without
	// --enable-auto-tool-choice: "\"auto\" tool choice requires
	// --enable-auto-tool-choice and --tool-call-parser to be set".
	if (status == 400 || status == 500 || status == 0) && strings.Contains(low, "tool") &&
		(strings.Contains(low, "support") || strings.Contains(low, "not enabled") || strings.Contains(low, "jinja") ||
			strings.Contains(low, "enable-auto-tool-choice") || strings.Contains(low, "tool-call-parser")) {
		return &Error{Kind: KindNoTools, Status: status, Msg: msg, Endpoint: o.endpoint, Err: err,
			Hint: "Use --tool-protocol text for this model"}
	}
	e := classify(status, msg, o.endpoint, err, "OPENAI_API_KEY or the config file's apiKeyEnv")
	if h != nil && e.RetryDelay == 0 {
		e.RetryDelay = retryAfter(h, time.Now())
	}
	return e
}
