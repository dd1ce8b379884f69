package mcpclient

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Question is a question a server asks the person (MCP's elicitation):
// an elicitation/create it sent, on the revisions up to 2025-11-25, or
// one of an input_required result, from 2026-07-28 on, which the SDK
// answers and retries the request with.
type Question struct {
	// Mode is "form" or "url".
	Mode string
	// Message is the question in the server's words.
	Message string
	// Schema is a form's requestedSchema as the server sent it.
	Schema json.RawMessage
	// URL and ID are a URL question's page and its elicitationId.
	URL, ID string
}

// Answer is the person's answer to a Question.
type Answer struct {
	// Action is "accept", "decline" or "cancel".
	Action string
	// Content is an accepted form's content, a JSON object; nil for
	// none.
	Content json.RawMessage
}

// Root is one root the client tells servers (roots/list): a file: URI
// and a name.
type Root struct {
	URI, Name string
}

// clientCapabilities are what the client declares to its servers: the
// roots of o, as its Roots say (the SDK's default, roots that may
// change, without them), and elicitation in the modes o declares.
func clientCapabilities(opts *mcp.ClientOptions, o Options) {
	if o.Roots == nil && o.Ask == nil {
		return
	}
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}}
	if o.Roots != nil {
		// The roots are given once, for the session: they do not change.
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	if o.Ask != nil && (o.AskForm || o.AskURL) {
		caps.Elicitation = &mcp.ElicitationCapabilities{}
		if o.AskForm {
			caps.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if o.AskURL {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return elicit(ctx, o.Ask, req.Params)
		}
	}
	opts.Capabilities = caps
}

// undeclared gives o.Ask the questions of a server that asks although
// the client declared no elicitation: the SDK would refuse them in its
// own words ("client does not support elicitation"), which name neither
// gemkit nor why; Ask refuses them in words that do. The SDK's handler
// would also be taken for a declaration, so a middleware answers them.
func undeclared(c *mcp.Client, o Options) {
	if o.Ask == nil || o.AskForm || o.AskURL {
		return
	}
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
				return elicit(ctx, o.Ask, r.Params)
			}
			return next(ctx, method, req)
		}
	})
}

// addRoots gives c the roots of o.
func addRoots(c *mcp.Client, o Options) {
	for _, r := range o.Roots {
		c.AddRoots(&mcp.Root{URI: r.URI, Name: r.Name})
	}
}

// elicit answers the question of p with ask. The SDK has checked a
// form's schema (flat, of primitive types) before, and checks an
// accepted form's content against it after. An error of ask is the
// server's answer, in its words: it is not the person's.
func elicit(ctx context.Context, ask func(context.Context, Question) (Answer, error), p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create without params"}
	}
	q := Question{Mode: p.Mode, Message: p.Message, URL: p.URL, ID: p.ElicitationID}
	if q.Mode == "" {
		q.Mode = "form"
	}
	if p.RequestedSchema != nil {
		raw, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema: " + err.Error()}
		}
		q.Schema = raw
	}
	a, err := ask(ctx, q)
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, we
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res := &mcp.ElicitResult{Action: a.Action}
	if a.Action == "accept" && len(a.Content) > 0 && string(a.Content) != "null" {
		if err := json.Unmarshal(a.Content, &res.Content); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the answer's content is not a JSON object: " + err.Error()}
		}
	}
	return res, nil
}
