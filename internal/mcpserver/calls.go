package mcpserver

// The handlers of the tools gemkit serves itself (the extensions' tools
// through internal/toolrun, the code-intelligence tools), as the SDK
// calls them; the tools of the extensions' own servers are in
// extservers.go and fastcall.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// outputSchema is the output schema of a tool whose manifest says
// `output: json` and declares no outputSchema: any object. MCP's structuredContent is an object; output that is JSON of
// another kind (an array, a string, a number) is the "value" of one.
var outputSchema = json.RawMessage(`{"description":"The tool's JSON output; output that is not an object is the value of \"value\".","type":"object"}`)

// structured is the structuredContent of a successful call of a tool
// with JSON output: the output itself when it is an object, else an
// object with the output as its "value".
func structured(out json.RawMessage) json.RawMessage {
	if len(out) > 0 && out[0] == '{' {
		return out
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"value": out})
	return b
}

// textResult is a result of one text.
func textResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}

// recovered turns a panic in a tool's handler into a tool error, so that
// one broken call does not end the server.
func (s *Server) recovered(name string, res **mcp.CallToolResult, err *error) {
	if p := recover(); p != nil {
		s.log.Error("a tool call panicked", "tool", name, "panic", p)
		*res, *err = textResult(fmt.Sprintf("gemkit failed while answering %s: %v", name, p), true), nil
	}
}

// callCodeIntel answers a code-intelligence tool.
func (s *Server) callCodeIntel(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer s.recovered(req.Params.Name, &res, &err)
	start := time.Now()
	text, isErr := s.cfg.CodeIntel.Call(ctx, req.Params.Name, arguments(req))
	s.log.Debug("tool call", "tool", req.Params.Name, "isError", isErr, "duration", time.Since(start))
	return textResult(text, isErr), nil
}

// arguments is a call's arguments as JSON: an object, {} when none came.
func arguments(req *mcp.CallToolRequest) json.RawMessage {
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		return raw
	}
	return json.RawMessage("{}")
}

func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	name := req.Params.Name
	defer s.recovered(name, &res, &err)
	args := arguments(req)
	start := time.Now()
	if token := req.Params.GetProgressToken(); token != nil {
		var printed atomic.Int64
		ctx = toolrun.WithPrinted(ctx, &printed)
		stop := s.reportProgress(ctx, req.Session, token, start, &printed)
		defer stop()
	}
	set := s.Set()
	ctx = withAnswer(ctx, req)
	out := set.Call(ctx, s.cfg.Runner, name, args, s.cfg.Limits)
	attrs := []any{"tool", name, "isError", out.IsError, "duration", time.Since(start)}
	if out.Err != nil {
		attrs = append(attrs, "err", out.Err)
	}
	s.log.Debug("tool call", attrs...)
	var ce *toolrun.ConsentError
	if errors.As(out.Err, &ce) {
		if !ce.Declined && canElicit(req) {
			return consentQuestion(toolrun.ConsentRequest{Extension: ce.Extension, Notice: ce.Notice, Lines: ce.Lines}, name), nil
		}
		// Not a failure of the tool, which did not run, but a question for
		// the person, so it is not marked isError: Gemini CLI 0.61 leaves
		// a call that ended in error out of its terminal display (by
		// default, ui.errorVerbosity "low": isVisibleInToolGroup) and even
		// then shows only "MCP tool … reported an error", never the text,
		// so the person would not learn what to do. A result's text it
		// shows; the model reads the same words.
		return textResult(out.Text, false), nil
	}
	res = textResult(out.Text, out.IsError)
	// A client validates structuredContent against the tool's output
	// schema and passes it on to its model beside (or instead of) the
	// text, which stays for clients that read only text.
	if !out.IsError && out.Result != nil && out.Result.Output != nil {
		sc := structured(out.Result.Output)
		if schema := declaredOutputSchema(set, name); schema != nil {
			if why := misfit(schema, sc); why != "" {
				return textResult(fmt.Sprintf("Tool %s printed JSON that does not fit the outputSchema its extension's manifest declares (%s), so it is not passed on as a result. Its output was:\n%s", name, why, out.Text), true), nil
			}
		}
		res.StructuredContent = sc
	}
	return res, nil
}

// declaredOutputSchema is the outputSchema the manifest of the tool
// exposed as name declares, or nil.
func declaredOutputSchema(set *disclosure.Set, name string) json.RawMessage {
	t := set.Tool(name)
	if t == nil {
		return nil
	}
	e := set.Extension(t.Extension)
	if e == nil {
		return nil
	}
	if d := e.Ext.Manifest.Tool(t.Tool); d != nil {
		return d.OutputSchema
	}
	return nil
}

// reportProgress sends notifications/progress for the call with token
// every ProgressInterval until the returned stop is called: the seconds
// since start as the progress (it must grow), and in words how long the
// tool has run and how much it printed. A client's own per-call timeout
// is then not the only sign of a long call; the server's --timeout still
// ends it.
func (s *Server) reportProgress(ctx context.Context, session *mcp.ServerSession, token any, start time.Time, printed *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.cfg.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			elapsed := time.Since(start)
			err := session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      elapsed.Seconds(),
				Message:       fmt.Sprintf("running for %s; %d bytes of output so far", elapsed.Round(100*time.Millisecond), printed.Load()),
			})
			if err != nil {
				s.log.Debug("progress notification", "err", err)
			}
		}
	}()
	return func() { close(done); <-finished }
}
