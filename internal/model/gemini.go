package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2/google"
)

// GeminiConfig configures the Gemini API (or Vertex AI) model.
type GeminiConfig struct {
	Model string
	// APIKey is the Gemini API key (GEMINI_API_KEY, else GOOGLE_API_KEY).
	APIKey string
	// BaseURL replaces the API's address (GOOGLE_GEMINI_BASE_URL, or
	// GOOGLE_VERTEX_BASE_URL for Vertex, as Gemini CLI reads them).
	BaseURL string
	// Vertex selects Vertex AI (GOOGLE_GENAI_USE_VERTEXAI), with Project
	// and Location (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION) and the
	// application-default credentials, or an APIKey (express mode).
	Vertex            bool
	Project, Location string
	HTTPClient        *http.Client
	// IdleTimeout ends a request whose server sends nothing for this long
	// (0: DefaultIdleTimeout).
	IdleTimeout time.Duration
}

// gemini speaks the Gemini REST API (streamGenerateContent with
// server-sent events) over net/http. Google's genai SDK would do the
// same, but it links gRPC, OpenCensus and the Cloud auth stack into every
// gemkit command whether or not it talks to a model: 40 MB of binary and
// some 9 MB of resident memory in `gemkit ide serve`, which never does.
type gemini struct {
	url      string // the streamGenerateContent URL
	apiKey   string // sent as x-goog-api-key; "" with ADC or a proxy
	adc      bool   // authorize with the application-default credentials
	endpoint string
	idle     time.Duration

	mu     sync.Mutex
	client *http.Client // nil until first use with ADC (which may probe the machine)
}

// NewGemini returns the Gemini model of cfg. It does not contact the API.
func NewGemini(ctx context.Context, cfg GeminiConfig) (Model, error) {
	model := cfg.Model
	if model == "" {
		return nil, errors.New("no model name: give one with --model or in the config file")
	}
	if strings.ContainsAny(model, "?&#") || strings.Contains(model, "..") {
		return nil, fmt.Errorf("the model name %q is not valid", model)
	}
	g := &gemini{apiKey: cfg.APIKey, client: cfg.HTTPClient, idle: cfg.IdleTimeout}
	base, version, path := cfg.BaseURL, "v1beta", ""
	if cfg.Vertex {
		version = "v1beta1"
		full := model
		if !strings.Contains(model, "/") {
			full = "publishers/google/models/" + model
		}
		switch {
		case cfg.APIKey != "" && cfg.Project == "":
			// Express mode: the key names the project.
		case cfg.Project != "" && cfg.Location != "":
			full = "projects/" + cfg.Project + "/locations/" + cfg.Location + "/" + full
			g.adc = cfg.APIKey == ""
		case base == "":
			return nil, errors.New("Vertex AI needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (with application-default credentials), or GOOGLE_API_KEY (express mode)")
		}
		path = full
		if base == "" {
			switch {
			case cfg.Location == "" || cfg.Location == "global" || cfg.APIKey != "":
				base = "https://aiplatform.googleapis.com/"
			default:
				base = "https://" + cfg.Location + "-aiplatform.googleapis.com/"
			}
		}
	} else {
		if cfg.APIKey == "" {
			return nil, errors.New("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), run `gemkit login`, or use an OpenAI-compatible endpoint with --base-url")
		}
		if !strings.HasPrefix(model, "models/") && !strings.HasPrefix(model, "tunedModels/") {
			path = "models/" + model
		} else {
			path = model
		}
		if base == "" {
			base = "https://generativelanguage.googleapis.com/"
		}
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the base URL %q is not an http(s) URL", base)
	}
	g.url = strings.TrimRight(base, "/") + "/" + version + "/" + path + ":streamGenerateContent?alt=sse"
	ep := "Gemini API"
	if cfg.Vertex {
		ep = "Vertex AI"
	}
	if cfg.BaseURL != "" {
		ep = cfg.BaseURL
	}
	g.endpoint = model + " at " + ep
	if g.client == nil && !g.adc {
		g.client = http.DefaultClient
	}
	return g, nil
}

func (g *gemini) Describe() string { return g.endpoint }

// httpClient is the client requests go through: the one given or
// net/http's default, set by NewGemini, else, for Vertex AI without a key,
// one that adds the application-default credentials, made on first use.
func (g *gemini) httpClient(ctx context.Context) (*http.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client != nil {
		return g.client, nil
	}
	// The token source keeps the context for every later refresh: it must
	// outlive this first request.
	c, err := google.DefaultClient(context.WithoutCancel(ctx), "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return nil, &Error{Kind: KindAuth, Endpoint: g.endpoint, Msg: err.Error(), Err: err,
			Hint: "Run `gcloud auth application-default login`, or set GOOGLE_API_KEY for Vertex AI express mode"}
	}
	g.client = c
	return g.client, nil
}

// The REST API's JSON, as much of it as gemkit sends and reads.
type (
	gContent struct {
		Role  string  `json:"role,omitempty"`
		Parts []gPart `json:"parts"`
	}
	gPart struct {
		Text             string             `json:"text,omitempty"`
		Thought          bool               `json:"thought,omitempty"`
		ThoughtSignature string             `json:"thoughtSignature,omitempty"`
		FunctionCall     *gFunctionCall     `json:"functionCall,omitempty"`
		FunctionResponse *gFunctionResponse `json:"functionResponse,omitempty"`
	}
	gFunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	gFunctionResponse struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	gFunctionDecl struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parametersJsonSchema,omitempty"`
	}
	gTool struct {
		FunctionDeclarations []gFunctionDecl `json:"functionDeclarations"`
	}
	gRequest struct {
		Contents          []gContent     `json:"contents"`
		SystemInstruction *gContent      `json:"systemInstruction,omitempty"`
		Tools             []gTool        `json:"tools,omitempty"`
		GenerationConfig  map[string]any `json:"generationConfig,omitempty"`
	}
	gResponse struct {
		Candidates []struct {
			Content      *gContent `json:"content"`
			FinishReason string    `json:"finishReason"`
		} `json:"candidates"`
		PromptFeedback *struct {
			BlockReason string `json:"blockReason"`
		} `json:"promptFeedback"`
		UsageMetadata *struct {
			CandidatesTokenCount int `json:"candidatesTokenCount"`
		} `json:"usageMetadata"`
		Error *gError `json:"error"`
	}
	gError struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Status  string         `json:"status"`
		Details []gErrorDetail `json:"details"`
	}
	// gErrorDetail is one google.rpc detail of an error: RetryInfo,
	// QuotaFailure or ErrorInfo are the ones read.
	gErrorDetail struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
		Violations []struct {
			QuotaID string `json:"quotaId"`
		} `json:"violations"`
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
)

func (g *gemini) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	body := gRequest{}
	if req.System != "" {
		body.SystemInstruction = &gContent{Parts: []gPart{{Text: req.System}}}
	}
	if req.MaxOutputTokens > 0 {
		body.GenerationConfig = map[string]any{"maxOutputTokens": req.MaxOutputTokens}
	}
	if len(req.Tools) > 0 {
		decls := make([]gFunctionDecl, len(req.Tools))
		for i, t := range req.Tools {
			decls[i] = gFunctionDecl{Name: t.Name, Description: t.Description, Parameters: t.Schema}
		}
		body.Tools = []gTool{{FunctionDeclarations: decls}}
	}
	var err error
	if body.Contents, err = geminiContents(req.Messages); err != nil {
		return Reply{}, err
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return Reply{}, fmt.Errorf("encode the request: %w", err)
	}
	client, err := g.httpClient(ctx)
	if err != nil {
		return Reply{}, err
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	if g.apiKey != "" {
		header.Set("x-goog-api-key", g.apiKey)
	}
	parent := ctx
	resp, ctx, idle, err := post(ctx, client, g.url, g.endpoint, header, payload, g.idle)
	if err != nil {
		return Reply{}, err
	}
	defer idle.stop()
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return Reply{}, g.httpError(parent, resp)
	}
	var r Reply
	events := 0
	err = readSSE(idle.body(resp.Body), func(data []byte) error {
		events++
		var chunk gResponse
		if err := json.Unmarshal(data, &chunk); err != nil {
			return &Error{Kind: KindServer, Status: resp.StatusCode, Endpoint: g.endpoint, Err: err, Midstream: true,
				Msg:  "its stream sent something that is not JSON: " + clip(string(data), 80),
				Hint: "Check that the base URL is a Gemini API endpoint"}
		}
		if e := chunk.Error; e != nil {
			me := g.apiError(e.Code, e)
			me.Midstream = true
			return me
		}
		return g.take(&r, &chunk, onText)
	})
	if err != nil {
		if parent.Err() != nil {
			return r, parent.Err()
		}
		var me *Error
		if errors.As(err, &me) {
			return r, err
		}
		return r, idle.explain(brokenStream(g.endpoint, resp.StatusCode, err), ctx)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); events == 0 && mt != "text/event-stream" {
		return r, notAStream(g.endpoint, resp.StatusCode, resp.Header.Get("Content-Type"), "Gemini API events")
	}
	if r.Finish == FinishSafety {
		return r, SafetyError(g.endpoint, "finish reason "+r.Detail)
	}
	if err := g.check(&r, req); err != nil {
		return r, err
	}
	return r, nil
}

// check refuses a reply that did not finish, by the rules of Gemini
// CLI's stream validation (processStreamResponse in
// packages/core/src/core/geminiChat.ts): a reply with a function call is
// complete; without one, no finish reason, MALFORMED_FUNCTION_CALL,
// UNEXPECTED_TOOL_CALL and an empty text are not, except that a reply to
// function results may be empty.
func (g *gemini) check(r *Reply, req Request) error {
	if len(r.Calls) > 0 {
		if r.Finish == "" {
			r.Finish = FinishStop
		}
		return nil
	}
	switch r.Detail {
	case "":
		return incomplete(g.endpoint, 200, "the stream ended without a finish reason")
	case "MALFORMED_FUNCTION_CALL":
		return incomplete(g.endpoint, 200, "finish reason MALFORMED_FUNCTION_CALL: the model wrote a function call the API could not parse")
	case "UNEXPECTED_TOOL_CALL":
		return incomplete(g.endpoint, 200, "finish reason UNEXPECTED_TOOL_CALL: the model called a tool it was not offered")
	}
	if r.Finish == FinishMaxTokens || strings.TrimSpace(r.Text) != "" || answersResults(req) {
		return nil
	}
	if r.Finish == FinishOther {
		return incomplete(g.endpoint, 200, "finish reason "+r.Detail+" with no text")
	}
	return incomplete(g.endpoint, 200, "the model sent an empty reply")
}

// answersResults reports a request whose last message is tool results:
// the model may end its turn there without words.
func answersResults(req Request) bool {
	n := len(req.Messages)
	return req.AfterResults || n > 0 && req.Messages[n-1].Role == Tool
}

// take adds one streamed chunk to r.
func (g *gemini) take(r *Reply, chunk *gResponse, onText func(string)) error {
	if pf := chunk.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return SafetyError(g.endpoint, "the prompt was blocked: "+pf.BlockReason)
	}
	if u := chunk.UsageMetadata; u != nil && u.CandidatesTokenCount > 0 {
		r.OutputTokens = u.CandidatesTokenCount
	}
	if len(chunk.Candidates) == 0 {
		return nil
	}
	cand := chunk.Candidates[0]
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			switch {
			case p.Thought:
			case p.FunctionCall != nil:
				args := p.FunctionCall.Args
				if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
					args = json.RawMessage("{}")
				}
				id := p.FunctionCall.ID
				if id == "" {
					id = madeUpID + strconv.Itoa(len(r.Calls)+1)
				}
				r.Calls = append(r.Calls, Call{ID: id, Name: p.FunctionCall.Name, Args: args, Signature: p.ThoughtSignature})
			case p.Text != "":
				r.Text += p.Text
				if onText != nil {
					onText(p.Text)
				}
			}
		}
	}
	if cand.FinishReason != "" {
		r.Detail = cand.FinishReason
		switch cand.FinishReason {
		case "STOP":
			r.Finish = FinishStop
		case "MAX_TOKENS":
			r.Finish = FinishMaxTokens
		case "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY":
			r.Finish = FinishSafety
		default:
			r.Finish = FinishOther
		}
	}
	return nil
}

// httpError turns a refused request into an *Error with the API's words:
// {"error": {"code", "message", "status", "details"}}, alone or in a list.
func (g *gemini) httpError(ctx context.Context, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var one struct{ Error *gError }
	var list []struct{ Error *gError }
	var e *gError
	if json.Unmarshal(b, &one) == nil && one.Error != nil {
		e = one.Error
	} else if json.Unmarshal(b, &list) == nil && len(list) > 0 && list[0].Error != nil {
		e = list[0].Error
	}
	if e == nil {
		me := classify(resp.StatusCode, bodyWords(resp.Status, resp.Header.Get("Content-Type"), b), g.endpoint, fmt.Errorf("HTTP %s", resp.Status), geminiKeys)
		if me.RetryDelay == 0 {
			me.RetryDelay = retryAfter(resp.Header, time.Now())
		}
		return me
	}
	me := g.apiError(resp.StatusCode, e)
	me.Err = fmt.Errorf("HTTP %s", resp.Status)
	return me
}

const geminiKeys = "GEMINI_API_KEY or GOOGLE_API_KEY"

// apiError classifies a Gemini error object, reading its google.rpc
// details for the wait as Gemini CLI's classifyGoogleError does
// (packages/core/src/utils/googleQuotaErrors.ts): a per-day quota is
// final, RetryInfo's retryDelay is the wait (final past five minutes), a
// per-minute quota waits 60 s.
func (g *gemini) apiError(status int, e *gError) *Error {
	msg := strings.TrimSpace(e.Status + " " + e.Message)
	if msg == "" {
		msg = http.StatusText(status)
	}
	me := classify(status, msg, g.endpoint, nil, geminiKeys)
	if status != 429 && status != 499 && status != 503 || me.noQuota {
		return me
	}
	for _, d := range e.Details {
		if strings.HasSuffix(d.Type, "google.rpc.QuotaFailure") {
			for _, v := range d.Violations {
				if strings.Contains(v.QuotaID, "PerDay") || strings.Contains(v.QuotaID, "Daily") {
					me.Final = true
					me.Msg += " (the daily quota " + v.QuotaID + " is used up)"
					return me
				}
			}
		}
	}
	for _, d := range e.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") && d.RetryDelay != "" {
			if w, ok := parseGoogleDuration(d.RetryDelay); ok && w > 0 {
				me.RetryDelay, me.Final = w, w > maxRetryableDelay
				return me
			}
		}
	}
	for _, d := range e.Details {
		perMinute := strings.Contains(d.Metadata["quota_limit"], "PerMinute")
		for _, v := range d.Violations {
			perMinute = perMinute || strings.Contains(v.QuotaID, "PerMinute")
		}
		if perMinute && me.RetryDelay == 0 {
			me.RetryDelay = time.Minute
		}
	}
	return me
}

// geminiContents maps messages to Gemini contents: tool results become a
// user turn of function responses ({"output": …} or {"error": …}).
//
// The API refuses a part with no data ("required oneof field 'data' must
// have one initialized field") and so every later request of a
// conversation holding one: a model turn with neither text nor calls is
// left out (or, after function responses, says noReply), an empty user
// text too.
func geminiContents(msgs []Message) ([]gContent, error) {
	out := make([]gContent, 0, len(msgs))
	for _, m := range msgs {
		var c gContent
		switch m.Role {
		case User:
			c.Role = "user"
			if m.Text != "" {
				c.Parts = []gPart{{Text: m.Text}}
			}
		case Assistant:
			c.Role = "model"
			if m.Text != "" {
				c.Parts = append(c.Parts, gPart{Text: m.Text})
			}
			for _, call := range m.Calls {
				// Args go back as the model sent them, when they are a
				// JSON object; anything else becomes {}.
				args := json.RawMessage("{}")
				var obj map[string]json.RawMessage
				if len(call.Args) > 0 && json.Unmarshal(call.Args, &obj) == nil && obj != nil {
					args = call.Args
				}
				c.Parts = append(c.Parts, gPart{FunctionCall: &gFunctionCall{ID: apiID(call.ID), Name: call.Name, Args: args}, ThoughtSignature: call.Signature})
			}
		case Tool:
			c.Role = "user"
			for _, res := range m.Results {
				key := "output"
				if res.IsError {
					key = "error"
				}
				c.Parts = append(c.Parts, gPart{FunctionResponse: &gFunctionResponse{
					ID: apiID(res.CallID), Name: res.Name, Response: map[string]any{key: res.Text}}})
			}
		default:
			return nil, fmt.Errorf("unknown message role %q", m.Role)
		}
		if len(c.Parts) == 0 {
			if c.Role == "model" && len(out) > 0 && hasResponses(out[len(out)-1]) {
				// A turn of function responses is answered by a model
				// turn before the next user turn, as Gemini CLI's
				// closeUnansweredToolResponseTurn keeps it.
				c.Parts = []gPart{{Text: noReply}}
			} else {
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// noReply stands for a model turn that ended without words after
// function responses.
const noReply = "(no reply)"

func hasResponses(c gContent) bool {
	for _, p := range c.Parts {
		if p.FunctionResponse != nil {
			return true
		}
	}
	return false
}

// madeUpID starts the id gemkit gives a function call the API sent
// without one; such an id is never sent back. Gemini 3 sends ids, and
// wants each one back on the echoed call and on its function response.
const madeUpID = "gemkit-call-"

func apiID(id string) string {
	if strings.HasPrefix(id, madeUpID) {
		return ""
	}
	return id
}
