package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capabilities are what the server said it offers beyond tools.
type Capabilities struct {
	Prompts, Resources, Subscribe, Logging, Completions bool
}

// Capabilities are the server's, as its initialize answer declared them.
func (c *Client) Capabilities() Capabilities {
	r := c.cs.InitializeResult()
	if r == nil || r.Capabilities == nil {
		return Capabilities{}
	}
	caps := r.Capabilities
	return Capabilities{
		Prompts:     caps.Prompts != nil,
		Resources:   caps.Resources != nil,
		Subscribe:   caps.Resources != nil && caps.Resources.Subscribe,
		Logging:     caps.Logging != nil,
		Completions: caps.Completions != nil,
	}
}

// Item is one prompt, resource or resource template a server lists: its
// ID (a prompt's name, a resource's URI, a template's URI template) and
// the whole entry as the server sent it, for a proxy to pass on.
type Item struct {
	ID  string
	Raw json.RawMessage
}

// ListPrompts lists every prompt, page after page.
func (c *Client) ListPrompts(ctx context.Context) ([]Item, error) {
	ctx, done := c.request(ctx)
	defer done()
	return items(c.cs.Prompts(ctx, nil), func(p *mcp.Prompt) string { return p.Name })
}

// ListResources lists every resource, page after page.
func (c *Client) ListResources(ctx context.Context) ([]Item, error) {
	ctx, done := c.request(ctx)
	defer done()
	return items(c.cs.Resources(ctx, nil), func(r *mcp.Resource) string { return r.URI })
}

// ListResourceTemplates lists every resource template, page after page.
func (c *Client) ListResourceTemplates(ctx context.Context) ([]Item, error) {
	ctx, done := c.request(ctx)
	defer done()
	return items(c.cs.ResourceTemplates(ctx, nil), func(t *mcp.ResourceTemplate) string { return t.URITemplate })
}

func items[T any](seq func(yield func(T, error) bool), id func(T) string) ([]Item, error) {
	var out []Item
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", id(v), err)
		}
		out = append(out, Item{ID: id(v), Raw: raw})
	}
	return out, nil
}

// GetPromptRaw gets the prompt name with args and returns the server's
// result as it encoded it (as CallToolRaw does).
func (c *Client) GetPromptRaw(ctx context.Context, name string, args map[string]string) (json.RawMessage, error) {
	ctx, done := c.request(ctx)
	defer done()
	res, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return result(res)
}

// ReadResourceRaw reads the resource uri and returns the server's result
// as it encoded it (as CallToolRaw does).
func (c *Client) ReadResourceRaw(ctx context.Context, uri string) (json.RawMessage, error) {
	ctx, done := c.request(ctx)
	defer done()
	res, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, err
	}
	return result(res)
}

// Completion is a completion/complete request: the argument (Name) of a
// prompt or a resource template (Ref) whose value so far is Value.
type Completion struct {
	// Ref is the prompt's name, or the resource template's URI
	// template, as the server lists it.
	Ref Ref
	// Name and Value are the argument's name and its value so far.
	Name, Value string
	// Arguments are the values of the other arguments, when given.
	Arguments map[string]string
}

// Ref is what a Completion completes an argument of.
type Ref struct {
	// Type is RefPrompt or RefResource.
	Type string
	// Name is the prompt's name (RefPrompt); URI the resource's URI or
	// URI template (RefResource).
	Name, URI string
}

// The types of a Ref.
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteRaw asks the server to complete an argument (completion/complete)
// and returns its result as it encoded it (as CallToolRaw does).
func (c *Client) CompleteRaw(ctx context.Context, req Completion) (json.RawMessage, error) {
	ctx, done := c.request(ctx)
	defer done()
	p := &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: req.Ref.Type, Name: req.Ref.Name, URI: req.Ref.URI},
		Argument: mcp.CompleteParamsArgument{Name: req.Name, Value: req.Value},
	}
	if len(req.Arguments) > 0 {
		p.Context = &mcp.CompleteContext{Arguments: req.Arguments}
	}
	res, err := c.cs.Complete(ctx, p)
	if err != nil {
		return nil, err
	}
	return result(res)
}

// Subscribe asks the server for notifications/resources/updated of uri
// (Options.Events receives them).
func (c *Client) Subscribe(ctx context.Context, uri string) error {
	ctx, done := c.request(ctx)
	defer done()
	return c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
}

// Unsubscribe ends a Subscribe.
func (c *Client) Unsubscribe(ctx context.Context, uri string) error {
	ctx, done := c.request(ctx)
	defer done()
	return c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
}

// SetLogLevel asks the server to send its log from level up (MCP's
// levels: debug, info, notice, warning, error, critical, alert,
// emergency).
func (c *Client) SetLogLevel(ctx context.Context, level string) error {
	ctx, done := c.request(ctx)
	defer done()
	return c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
}

// The notifications Options.Events receives.
const (
	LogMessage         = "notifications/message"
	ToolsListChanged   = "notifications/tools/list_changed"
	PromptsListChanged = "notifications/prompts/list_changed"
	ResourcesChanged   = "notifications/resources/list_changed"
	ResourceUpdated    = "notifications/resources/updated"
)

// events sets the SDK's notification handlers that hand them to f.
func events(opts *mcp.ClientOptions, f func(method string, params json.RawMessage)) {
	send := func(method string, p any) {
		raw, err := json.Marshal(p)
		if err != nil {
			return
		}
		f(method, raw)
	}
	opts.LoggingMessageHandler = func(_ context.Context, r *mcp.LoggingMessageRequest) { send(LogMessage, r.Params) }
	opts.ToolListChangedHandler = func(_ context.Context, r *mcp.ToolListChangedRequest) { send(ToolsListChanged, r.Params) }
	opts.PromptListChangedHandler = func(_ context.Context, r *mcp.PromptListChangedRequest) { send(PromptsListChanged, r.Params) }
	opts.ResourceListChangedHandler = func(_ context.Context, r *mcp.ResourceListChangedRequest) { send(ResourcesChanged, r.Params) }
	opts.ResourceUpdatedHandler = func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { send(ResourceUpdated, r.Params) }
}

// SSE connects to an MCP server over the older HTTP+SSE transport
// (protocol revision 2024-11-05) at url, through hc (nil is a client of
// its own), sending header with every request.
func SSE(ctx context.Context, url string, hc *http.Client, header http.Header, o Options) (*Client, error) {
	return connect(ctx, &mcp.SSEClientTransport{Endpoint: url, HTTPClient: withHeader(hc, header, nil)}, o)
}

// withHeader is a copy of hc (nil: a client of its own) that sends
// header with every request and hands notify the notifications of every
// event stream it gets back.
func withHeader(hc *http.Client, header http.Header, notify func(string, json.RawMessage)) *http.Client {
	var base http.RoundTripper = http.DefaultTransport
	c := &http.Client{}
	if hc != nil {
		*c = *hc
		if hc.Transport != nil {
			base = hc.Transport
		}
	}
	c.Transport = &roundTripper{base: base, header: header, notify: notify}
	return c
}
