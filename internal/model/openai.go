package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
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
	c        openai.Client
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
		key = "none" // local servers need no key, the SDK wants one
	}
	opts := []option.RequestOption{option.WithAPIKey(key), option.WithMaxRetries(1)}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(cfg.BaseURL, "/")+"/"))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	ep := cfg.BaseURL
	if ep == "" {
		ep = "api.openai.com"
	}
	return &openaiModel{c: openai.NewClient(opts...), model: cfg.Model, endpoint: cfg.Model + " at " + ep}, nil
}

func (o *openaiModel) Describe() string { return o.endpoint }

func (o *openaiModel) Generate(ctx context.Context, req Request, onText func(string)) (Reply, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(o.model)}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case User:
			p.Messages = append(p.Messages, openai.UserMessage(m.Text))
		case Assistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.Calls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Args)},
					}})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case Tool:
			for _, r := range m.Results {
				text := r.Text
				if r.IsError {
					text = "Error: " + text
				}
				p.Messages = append(p.Messages, openai.ToolMessage(text, r.CallID))
			}
		default:
			return Reply{}, fmt.Errorf("unknown message role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: shared.FunctionParameters(t.Schema),
		}))
	}
	if req.MaxOutputTokens > 0 {
		// max_tokens is what the local servers (Ollama, llama.cpp, vLLM)
		// read; OpenAI accepts it for chat models too.
		p.MaxTokens = openai.Int(int64(req.MaxOutputTokens))
	}
	stream := o.c.Chat.Completions.NewStreaming(ctx, p)
	defer stream.Close()
	type partial struct {
		id, name string
		args     strings.Builder
	}
	calls := map[int64]*partial{}
	var r Reply
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Usage.CompletionTokens > 0 {
			r.OutputTokens = int(chunk.Usage.CompletionTokens)
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
			for _, tc := range ch.Delta.ToolCalls {
				pc := calls[tc.Index]
				if pc == nil {
					pc = &partial{}
					calls[tc.Index] = pc
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
				switch ch.FinishReason {
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
					r.Detail = ch.FinishReason
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return r, o.wrap(ctx, err)
	}
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
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
	var ae *openai.Error
	if errors.As(err, &ae) {
		msg := ae.Message
		if msg == "" {
			msg = ae.RawJSON()
		}
		low := strings.ToLower(msg)
		// Ollama: 400 "… does not support tools"; llama.cpp without
		// --jinja: "tools param requires --jinja flag"; vLLM without
		// --enable-auto-tool-choice: "… tool choice … not enabled" or similar.
		if (ae.StatusCode == 400 || ae.StatusCode == 500) && strings.Contains(low, "tool") &&
			(strings.Contains(low, "support") || strings.Contains(low, "not enabled") || strings.Contains(low, "jinja")) {
			return &Error{Kind: KindNoTools, Status: 400, Msg: msg, Endpoint: o.endpoint, Err: err,
				Hint: "Use --tool-protocol text for this model"}
		}
		if ae.StatusCode == 404 || ae.Code == "model_not_found" {
			return classify(404, msg, o.endpoint, err, "")
		}
		return classify(ae.StatusCode, msg, o.endpoint, err, "OPENAI_API_KEY or the config file's apiKeyEnv")
	}
	return classify(0, err.Error(), o.endpoint, err, "")
}
