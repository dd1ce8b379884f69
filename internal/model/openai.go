package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	openai "github.com/sashabaranov/go-openai"
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
}

type openaiModel struct {
	c        *openai.Client
	model    string
	endpoint string
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
	cc := openai.DefaultConfig(key)
	if cfg.BaseURL != "" {
		cc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	}
	if cfg.HTTPClient != nil {
		cc.HTTPClient = cfg.HTTPClient
	}
	ep := cfg.BaseURL
	if ep == "" {
		ep = "api.openai.com"
	}
	return &openaiModel{c: openai.NewClientWithConfig(cc), model: cfg.Model, endpoint: cfg.Model + " at " + ep}, nil
}

func (o *openaiModel) Describe() string { return o.endpoint }

func (o *openaiModel) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	p := openai.ChatCompletionRequest{Model: o.model}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: req.System})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case User:
			p.Messages = append(p.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: m.Text})
		case Assistant:
			a := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Text}
			for _, c := range m.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: c.Name, Arguments: string(c.Args)}})
			}
			p.Messages = append(p.Messages, a)
		case Tool:
			for _, r := range m.Results {
				text := r.Text
				if r.IsError {
					text = "Error: " + text
				}
				p.Messages = append(p.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Content: text, ToolCallID: r.CallID})
			}
		default:
			return Reply{}, fmt.Errorf("unknown message role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.Schema}})
	}
	if req.MaxOutputTokens > 0 {
		// max_tokens is what the local servers (Ollama, llama.cpp, vLLM)
		// read; OpenAI's reasoning models want max_completion_tokens.
		p.MaxTokens = req.MaxOutputTokens
	}
	stream, err := o.c.CreateChatCompletionStream(ctx, p)
	if errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated) {
		p.MaxTokens, p.MaxCompletionTokens = 0, req.MaxOutputTokens
		stream, err = o.c.CreateChatCompletionStream(ctx, p)
	}
	if err != nil {
		return Reply{}, o.wrap(ctx, err)
	}
	defer stream.Close()
	type partial struct {
		id, name string
		args     strings.Builder
	}
	calls := map[int]*partial{}
	var r Reply
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return r, o.wrap(ctx, err)
		}
		if chunk.Usage != nil && chunk.Usage.CompletionTokens > 0 {
			r.OutputTokens = chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if s := ch.Delta.Content; s != "" {
				r.Text += s
				if onText != nil {
					onText(s)
				}
			}
			if ch.Delta.Refusal != "" {
				r.Detail = ch.Delta.Refusal
			}
			for n, tc := range ch.Delta.ToolCalls {
				i := n
				if tc.Index != nil {
					i = *tc.Index
				}
				pc := calls[i]
				if pc == nil {
					pc = &partial{}
					calls[i] = pc
				}
				if tc.ID != "" {
					pc.id = tc.ID
				}
				if tc.Function.Name != "" {
					pc.name += tc.Function.Name
				}
				pc.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				switch string(ch.FinishReason) {
				case "stop", "tool_calls", "function_call":
					r.Finish = FinishStop
				case "length":
					r.Finish = FinishMaxTokens
				case "content_filter":
					r.Finish = FinishSafety
				default:
					r.Finish = FinishOther
				}
				if r.Detail == "" {
					r.Detail = string(ch.FinishReason)
				}
			}
		}
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for n, i := range idx {
		pc := calls[i]
		args := strings.TrimSpace(pc.args.String())
		if args == "" {
			args = "{}"
		}
		if !json.Valid([]byte(args)) {
			// Kept as a JSON string, so that the transcript stays JSON
			// and the agent can tell the model what it sent.
			b, _ := json.Marshal(args)
			args = string(b)
		}
		id := pc.id
		if id == "" {
			id = fmt.Sprintf("call_%d", n+1)
		}
		r.Calls = append(r.Calls, Call{ID: id, Name: pc.name, Args: json.RawMessage(args)})
	}
	if r.Finish == FinishSafety {
		return r, SafetyError(o.endpoint, "finish reason content_filter")
	}
	if r.Finish == "" {
		r.Finish = FinishStop
	}
	return r, nil
}

func (o *openaiModel) wrap(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	status, msg, code := 0, err.Error(), ""
	var ae *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &ae):
		status, msg = ae.HTTPStatusCode, ae.Message
		if c, ok := ae.Code.(string); ok {
			code = c
		}
	case errors.As(err, &re):
		status, msg = re.HTTPStatusCode, strings.TrimSpace(string(re.Body))
		if msg == "" {
			msg = re.HTTPStatus
		}
	default:
		return classify(0, msg, o.endpoint, err, "")
	}
	low := strings.ToLower(msg)
	// Ollama: 400 "… does not support tools"; llama.cpp without
	// --jinja: "tools param requires --jinja flag"; vLLM without
	// --enable-auto-tool-choice: "… tool choice … not enabled" or similar.
	if (status == 400 || status == 500) && strings.Contains(low, "tool") &&
		(strings.Contains(low, "support") || strings.Contains(low, "not enabled") || strings.Contains(low, "jinja")) {
		return &Error{Kind: KindNoTools, Status: 400, Msg: msg, Endpoint: o.endpoint, Err: err,
			Hint: "Use --tool-protocol text for this model"}
	}
	if status == 404 || code == "model_not_found" {
		return classify(404, msg, o.endpoint, err, "")
	}
	return classify(status, msg, o.endpoint, err, "OPENAI_API_KEY or the config file's apiKeyEnv")
}
