package extmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// An extension's server may ask the person a question (MCP's
// elicitation) during a call. gemkit declares elicitation to a server
// only in the modes the client it starts for declared (Modes), and
// passes each question on to the client whose call is in flight, never
// to another: on the revisions up to 2025-11-25 the server's
// elicitation/create names no call, so the server must have exactly one
// call under way, and that call's client must take questions; from
// 2026-07-28 on the question comes in the call's own result, and goes to
// that call's client. Before it goes, gemkit checks it (bounded, a form
// without control characters, a URL of https) and puts a line above the
// server's words naming the extension and the server, so that it cannot
// pass for gemkit's own consent question. A question gemkit does not
// pass on is refused to the server in words, and the same words are
// added to the call's result, for the model and the person.
//
// roots/list is answered with the workspace, the folder a stdio server
// reads and runs in, as Gemini CLI answers it with its workspace's
// folders (gemini-cli-core's connectToMcpServer); no sampling is
// declared.

// Question and Answer are a server's question and the person's answer.
type (
	Question = mcpclient.Question
	Answer   = mcpclient.Answer
)

// Modes are the elicitation modes a client declared.
type Modes struct{ Form, URL bool }

// Any reports whether the client takes questions at all.
func (m Modes) Any() bool { return m.Form || m.URL }

// takes reports whether the client takes a question of mode.
func (m Modes) takes(mode string) bool {
	return mode == "form" && m.Form || mode == "url" && m.URL
}

// Asker puts a question, checked and labelled, to the client whose call
// caused it, and returns the person's answer.
type Asker func(ctx context.Context, q Question) (Answer, error)

// Client is who a request is made for: the modes it declared, its name
// for the words of a refusal, and for a tools/call the Asker of its
// questions (nil: it takes none).
type Client struct {
	Name  string
	Modes Modes
	Ask   Asker
}

// named is " (NAME)" of the client, "" when it has no name.
func (c *Client) named() string {
	if c == nil || c.Name == "" {
		return ""
	}
	return " (" + Printable(c.Name) + ")"
}

type clientKey struct{}

// WithClient is ctx for the requests made for c: a server started by
// one declares c's modes, and a call's questions go to c.Ask.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, &c)
}

func clientOf(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

// SetClient sets the Client a server started for no client's request
// (a kept catalog's start, a listing of gemkit's own) declares the
// modes of: gemkit mcp's one client on stdio.
func (m *Manager) SetClient(c Client) {
	c.Ask = nil
	m.client.Store(&c)
}

// modesFor are the modes a server started under ctx declares.
func (m *Manager) modesFor(ctx context.Context) Modes {
	if c := clientOf(ctx); c != nil {
		return c.Modes
	}
	if c := m.client.Load(); c != nil {
		return c.Modes
	}
	return Modes{}
}

// The bounds of a question gemkit passes on: Claude Code shows the first
// lines of a question, and a client draws a form of every property.
const (
	maxQuestion   = 2000
	maxSchema     = 8 << 10
	maxProperties = 16
	maxURL        = 2048
	maxID         = 128
)

// asking is what a server knows of the requests under way that may
// bring a question.
type asking struct {
	mu    sync.Mutex
	calls map[*calling]struct{}
}

// calling is one request under way: a tool call with its client, or a
// prompt or resource read (client nil), which no question may go to.
type calling struct {
	tool    bool
	client  *Client
	refused atomic.Pointer[[]string]
}

type callingKey struct{}

// begin notes a request under way for ctx's client (tool, for a tool
// call) and returns ctx for it; end forgets it.
func (a *asking) begin(ctx context.Context, tool bool) (context.Context, *calling) {
	c := &calling{tool: tool}
	if tool {
		c.client = clientOf(ctx)
	}
	a.mu.Lock()
	if a.calls == nil {
		a.calls = map[*calling]struct{}{}
	}
	a.calls[c] = struct{}{}
	a.mu.Unlock()
	return context.WithValue(ctx, callingKey{}, c), c
}

func (a *asking) end(c *calling) {
	a.mu.Lock()
	delete(a.calls, c)
	a.mu.Unlock()
}

// whose is the request a question asked under ctx belongs to: the one
// whose context it came with, else the one request under way; why says
// why there is none to ask for.
func (a *asking) whose(ctx context.Context) (c *calling, why string) {
	if c, ok := ctx.Value(callingKey{}).(*calling); ok {
		return c, ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch len(a.calls) {
	case 0:
		return nil, "it asked while none of its tool calls was under way, and gemkit passes a question on only to the client whose call asks it"
	case 1:
		for c := range a.calls {
			return c, ""
		}
	}
	return nil, fmt.Sprintf("it asked while %d of its requests were under way, and its question names none of them, so gemkit cannot tell whose person to ask", len(a.calls))
}

// ask is the Options.Ask of the server's client: the question goes to
// the client of the call it belongs to, checked and labelled (labelled),
// or is refused in words.
func (s *server) ask(ctx context.Context, q Question) (Answer, error) {
	c, why := s.asking.whose(ctx)
	switch {
	case why != "":
	case !c.tool:
		why = "it asked during a request that is not a tool call, and gemkit passes on only the questions of a tool call"
	case c.client == nil || c.client.Ask == nil || !c.client.Modes.Any():
		why = "the client that made the call" + c.client.named() + " declares no elicitation, so it cannot ask the person"
	case !c.client.Modes.takes(q.Mode):
		why = fmt.Sprintf("the client that made the call%s takes no questions of the %q mode", c.client.named(), Printable(q.Mode))
	}
	var lq Question
	if why == "" {
		lq, why = s.labelled(q)
	}
	if why != "" {
		return Answer{}, s.refuse(c, why)
	}
	return c.client.Ask(ctx, lq)
}

// refuse is the error refusing a question, in words naming the server;
// they are added to the result of the call c (nil: none).
func (s *server) refuse(c *calling, why string) error {
	msg := fmt.Sprintf("gemkit did not pass on the question the %s asked the person: %s", s.who(), why)
	s.m.log.Warn(msg)
	if c != nil {
		for {
			old := c.refused.Load()
			var now []string
			if old != nil {
				now = append(now, *old...)
			}
			now = append(now, msg)
			if c.refused.CompareAndSwap(old, &now) {
				break
			}
		}
	}
	return errors.New(msg)
}

// refusedLine is the line a call's result gets for the questions refused
// during it, "" for none.
func (c *calling) refusedLine() string {
	if c == nil {
		return ""
	}
	if r := c.refused.Load(); r != nil {
		return strings.Join(*r, "\n") + "."
	}
	return ""
}

// withAsked adds to a call's answer (res or err) the questions refused
// during it.
func (c *calling) withAsked(res json.RawMessage, err error) (json.RawMessage, error) {
	line := c.refusedLine()
	switch {
	case line == "":
	case err != nil:
		err = fmt.Errorf("%w; %s", err, line)
	default:
		res = withLine(res, line)
	}
	return res, err
}

// labelled is q as gemkit passes it on: the server's message below a
// line naming the extension and the server, its form or URL checked;
// why says why it is not passed on.
func (s *server) labelled(q Question) (Question, string) {
	if n := utf8.RuneCountInString(q.Message); n > maxQuestion {
		return q, fmt.Sprintf("its question is %d characters long, over the %d gemkit passes on", n, maxQuestion)
	}
	who := fmt.Sprintf("The MCP server %q of the extension %q", Printable(s.spec.Server), Printable(s.spec.Extension))
	msg := extension.PrintableText(strings.TrimSpace(q.Message))
	switch q.Mode {
	case "form":
		if why := checkForm(q.Schema); why != "" {
			return q, why
		}
		q.Message = who + " asks (its own question, not gemkit's):\n" + msg
	case "url":
		host, why := checkURL(q.URL)
		if why == "" && (len(q.ID) > maxID || Printable(q.ID) != q.ID) {
			why = "the id of its URL question is over 128 characters or holds control characters"
		}
		if why != "" {
			return q, why
		}
		q.Message = fmt.Sprintf("%s asks you to open a page of %s (its own link, not gemkit's; gemkit opens nothing):\n%s", who, host, msg)
	default:
		return q, fmt.Sprintf("its question is of the mode %q, which MCP does not have", Printable(q.Mode))
	}
	return q, ""
}

// checkForm says what keeps a form's schema from being passed on: over
// maxSchema bytes or maxProperties properties, or a string in it
// (a title, a description, a choice) holding what a terminal would run
// rather than show. The SDK has checked its shape (flat, primitive
// properties).
func checkForm(schema json.RawMessage) string {
	if len(schema) > maxSchema {
		return fmt.Sprintf("its form is %d bytes, over the %d gemkit passes on", len(schema), maxSchema)
	}
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	var all any
	if len(schema) > 0 && (json.Unmarshal(schema, &s) != nil || json.Unmarshal(schema, &all) != nil || s.Type != "object") {
		return "its form's schema is not a JSON object of type object"
	}
	if len(s.Properties) > maxProperties {
		return fmt.Sprintf("its form has %d fields, over the %d gemkit passes on", len(s.Properties), maxProperties)
	}
	for name, p := range s.Properties {
		// MCP's forms are flat: each field of a primitive type, or an
		// array of choices (client/elicitation, requested schema).
		switch p.Type {
		case "string", "number", "integer", "boolean", "array":
		default:
			return fmt.Sprintf("its form's field %q is of the type %q, and a form's fields are strings, numbers, booleans or choices", Printable(name), Printable(p.Type))
		}
	}
	if !printableStrings(all) {
		return "its form holds control characters, which a client could draw as something else"
	}
	return ""
}

// printableStrings reports whether every string of v, a decoded JSON
// value, and every member name, is printable text.
func printableStrings(v any) bool {
	switch v := v.(type) {
	case string:
		return extension.PrintableText(v) == v
	case []any:
		for _, e := range v {
			if !printableStrings(e) {
				return false
			}
		}
	case map[string]any:
		for k, e := range v {
			if Printable(k) != k || !printableStrings(e) {
				return false
			}
		}
	}
	return true
}

// checkURL returns the host of a URL question's page, or why it is not
// passed on: only an https URL of a host, whole, in plain characters
// (a name outside ASCII in its xn-- form), without a user or password
// before the host, which could make one host read as another.
func checkURL(raw string) (host, why string) {
	switch {
	case len(raw) > maxURL:
		return "", fmt.Sprintf("its URL is %d characters long, over the %d gemkit passes on", len(raw), maxURL)
	case strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '\\' }):
		return "", "its URL holds spaces, control characters, backslashes or characters outside ASCII"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", "its URL cannot be read (" + Printable(err.Error()) + ")"
	case u.Scheme != "https":
		return "", fmt.Sprintf("its URL is of %q, and gemkit passes on only https links", Printable(u.Scheme))
	case u.User != nil:
		return "", "its URL has a user or password before its host, which can make one host read as another"
	case u.Hostname() == "" || u.Opaque != "":
		return "", "its URL names no host"
	}
	return u.Host, ""
}

// roots are the roots the server's client declares: the workspace, as
// the sandbox shows it to a stdio server (its working folder, at the
// same path), and as Gemini CLI gives it to every server.
func (s *server) roots() []mcpclient.Root {
	ws := s.m.cfg.Workspace
	if ws == "" {
		return []mcpclient.Root{}
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(ws)}
	return []mcpclient.Root{{URI: u.String(), Name: filepath.Base(ws)}}
}
