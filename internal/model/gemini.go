package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"google.golang.org/genai"
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
}

type gemini struct {
	c        *genai.Client
	model    string
	endpoint string
}

// NewGemini returns the Gemini model of cfg. It does not contact the API.
func NewGemini(ctx context.Context, cfg GeminiConfig) (Model, error) {
	cc := &genai.ClientConfig{HTTPClient: cfg.HTTPClient}
	if cfg.Vertex {
		cc.Backend = genai.BackendVertexAI
		cc.Project, cc.Location = cfg.Project, cfg.Location
		if cfg.Project == "" && cfg.APIKey != "" {
			cc.APIKey = cfg.APIKey
		}
	} else {
		if cfg.APIKey == "" {
			return nil, errors.New("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or use an OpenAI-compatible endpoint with --base-url")
		}
		cc.Backend = genai.BackendGeminiAPI
		cc.APIKey = cfg.APIKey
	}
	if cfg.BaseURL != "" {
		cc.HTTPOptions.BaseURL = cfg.BaseURL
	}
	c, err := genai.NewClient(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("set up the Gemini client: %w", err)
	}
	ep := "Gemini API"
	if cfg.Vertex {
		ep = "Vertex AI"
	}
	if cfg.BaseURL != "" {
		ep = cfg.BaseURL
	}
	return &gemini{c: c, model: cfg.Model, endpoint: cfg.Model + " at " + ep}, nil
}

func (g *gemini) Describe() string { return g.endpoint }

func (g *gemini) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	cfg := &genai.GenerateContentConfig{}
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if req.MaxOutputTokens > 0 {
		cfg.MaxOutputTokens = int32(req.MaxOutputTokens)
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, len(req.Tools))
		for i, t := range req.Tools {
			decls[i] = &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: t.Schema}
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	contents, err := geminiContents(req.Messages)
	if err != nil {
		return Reply{}, err
	}
	var r Reply
	for resp, err := range g.c.Models.GenerateContentStream(ctx, g.model, contents, cfg) {
		if err != nil {
			return r, g.wrap(ctx, err)
		}
		if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
			return r, SafetyError(g.endpoint, "the prompt was blocked: "+string(pf.BlockReason))
		}
		if u := resp.UsageMetadata; u != nil && u.CandidatesTokenCount > 0 {
			r.OutputTokens = int(u.CandidatesTokenCount)
		}
		if len(resp.Candidates) == 0 {
			continue
		}
		cand := resp.Candidates[0]
		if cand.Content != nil {
			for _, p := range cand.Content.Parts {
				switch {
				case p.Thought:
				case p.FunctionCall != nil:
					args, _ := json.Marshal(p.FunctionCall.Args)
					if p.FunctionCall.Args == nil {
						args = []byte("{}")
					}
					id := p.FunctionCall.ID
					if id == "" {
						id = "call_" + strconv.Itoa(len(r.Calls)+1)
					}
					r.Calls = append(r.Calls, Call{ID: id, Name: p.FunctionCall.Name, Args: args})
				case p.Text != "":
					r.Text += p.Text
					if onText != nil {
						onText(p.Text)
					}
				}
			}
		}
		if cand.FinishReason != "" {
			r.Detail = string(cand.FinishReason)
			switch cand.FinishReason {
			case genai.FinishReasonStop:
				r.Finish = FinishStop
			case genai.FinishReasonMaxTokens:
				r.Finish = FinishMaxTokens
			case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist, genai.FinishReasonSPII, genai.FinishReasonRecitation:
				r.Finish = FinishSafety
			default:
				r.Finish = FinishOther
			}
		}
	}
	if r.Finish == FinishSafety {
		return r, SafetyError(g.endpoint, "finish reason "+r.Detail)
	}
	if r.Finish == "" {
		r.Finish = FinishStop
	}
	return r, nil
}

func (g *gemini) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ae genai.APIError
	if errors.As(err, &ae) {
		return classify(ae.Code, ae.Status+" "+ae.Message, g.endpoint, err, "GEMINI_API_KEY or GOOGLE_API_KEY")
	}
	var ap *genai.APIError
	if errors.As(err, &ap) {
		return classify(ap.Code, ap.Status+" "+ap.Message, g.endpoint, err, "GEMINI_API_KEY or GOOGLE_API_KEY")
	}
	return classify(0, err.Error(), g.endpoint, err, "GEMINI_API_KEY or GOOGLE_API_KEY")
}

// geminiContents maps messages to Gemini contents: tool results become a
// user turn of function responses ({"output": …} or {"error": …}).
func geminiContents(msgs []Message) ([]*genai.Content, error) {
	out := make([]*genai.Content, 0, len(msgs))
	for _, m := range msgs {
		c := &genai.Content{}
		switch m.Role {
		case User:
			c.Role = genai.RoleUser
			c.Parts = []*genai.Part{{Text: m.Text}}
		case Assistant:
			c.Role = genai.RoleModel
			if m.Text != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: m.Text})
			}
			for _, call := range m.Calls {
				var args map[string]any
				if len(call.Args) > 0 {
					if err := json.Unmarshal(call.Args, &args); err != nil {
						args = map[string]any{}
					}
				}
				c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{Name: call.Name, Args: args}})
			}
			if len(c.Parts) == 0 {
				c.Parts = []*genai.Part{{Text: ""}}
			}
		case Tool:
			c.Role = genai.RoleUser
			for _, res := range m.Results {
				key := "output"
				if res.IsError {
					key = "error"
				}
				c.Parts = append(c.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
					Name: res.Name, Response: map[string]any{key: res.Text}}})
			}
		default:
			return nil, fmt.Errorf("unknown message role %q", m.Role)
		}
		out = append(out, c)
	}
	return out, nil
}
