package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// An extension tool's consent question goes to a client that declares
// form elicitation (clientCapabilities.elicitation.form, stable in ACP
// v1 since 2026-07-24; Zed declares it by default) as an
// elicitation/create of the session and the tool call: a form whose one
// field chooses "once" or "always", Accept runs the tool and Decline
// runs nothing. Per the protocol's schema (@agentclientprotocol/sdk
// 2.4.0, schema/v1/schema.json, ElicitationCapabilities) an elicitation
// object without form declares no form mode, so such a client is asked
// as every other is, in a permission request. An edit's review stays a
// permission request for every client: it carries the diff, which a
// form cannot show.
//
// coder/acp-go-sdk v0.13.0 sends elicitation/create with the fields of
// the draft it was made from, which has no sessionId or toolCallId:
// gemkit puts them in the request's _meta under scopeKey, and the wire
// (scoped) moves them to where ACP v1 has them before the message goes
// out.

// scopeKey is the _meta key that carries an elicitation's scope to the
// wire.
const scopeKey = "gemkit.dev/scope"

// allowField is the form field of the consent question.
const allowField = "allow"

// elicitsForm reports whether the client declared form elicitation.
func (s *session) elicitsForm() bool {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	e := s.srv.client.Elicitation
	return e != nil && e.Form != nil
}

// allowByForm asks q, for the tool call under way, in an elicitation
// form: Accept with "always" records consent as "Always allow" does,
// with "once" lets this run go only; Decline, Cancel or anything else
// runs nothing. Unanswered for the permission timeout, or cancelled, it
// is an error, as a permission request is.
func (s *session) allowByForm(ctx context.Context, q toolrun.ConsentRequest) (toolrun.Answer, error) {
	ext := extension.Printable(q.Extension)
	title := fmt.Sprintf("Run %s (extension %s)", s.curN, ext)
	schema := sdk.UnstableElicitationSchema{
		Type:  "object",
		Title: &title,
		Properties: map[string]any{allowField: map[string]any{
			"type": "string", "title": "Allow",
			"oneOf": []any{
				map[string]any{"const": "once", "title": "Allow once"},
				map[string]any{"const": "always", "title": "Always allow " + ext},
			},
			"default": "once",
		}},
		Required: []string{allowField},
	}
	msg := q.Question(s.curN, "\n\n", "- ") + "\nAccept runs it in its sandbox (once, or always from now on); Decline runs nothing."
	req := sdk.UnstableCreateElicitationRequest{Form: &sdk.UnstableCreateElicitationForm{
		Meta:            map[string]any{scopeKey: map[string]any{"sessionId": s.id, "toolCallId": s.cur}},
		Message:         msg,
		RequestedSchema: schema,
	}}
	tctx, cancel := context.WithTimeout(ctx, s.srv.cfg.PermissionTimeout)
	defer cancel()
	resp, err := s.srv.conn.UnstableCreateElicitation(tctx, req)
	if err != nil && tctx.Err() != nil {
		s.cancelSent(s.cur)
	} else {
		s.srv.wire.forget(s.id, s.cur)
	}
	switch {
	case ctx.Err() != nil:
		return toolrun.Decline, ctx.Err()
	case tctx.Err() != nil:
		return toolrun.Decline, fmt.Errorf("%s did not answer the question within %v", s.client, s.srv.cfg.PermissionTimeout)
	case err != nil:
		return toolrun.Decline, fmt.Errorf("ask %s: %w", s.client, err)
	case resp.Accept == nil:
		return toolrun.Decline, nil
	}
	switch resp.Accept.Content[allowField] {
	case "always":
		return toolrun.AllowAlways, nil
	case "once":
		return toolrun.AllowOnce, nil
	}
	s.srv.cfg.Log.Info("an accepted consent question chose no answer gemkit offered; the tool does not run", "session", s.id, "content", resp.Accept.Content)
	return toolrun.Decline, nil
}

// elicitationCreate is how the wire spots an elicitation/create.
var elicitationCreate = []byte(`"method":"` + sdk.ClientMethodElicitationCreate + `"`)

// scoped is the elicitation/create message b with the scope gemkit put
// in its _meta moved to the params' sessionId and toolCallId, as ACP v1
// has them, and the request noted as a permission request is, for its
// $/cancel_request (cancelWritten). A message that is not one, or
// carries no scope, goes as it is.
func (c *wire) scoped(b []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != sdk.ClientMethodElicitationCreate {
		return b
	}
	var params map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["params"], &params) != nil || json.Unmarshal(params["_meta"], &meta) != nil {
		return b
	}
	var scope struct {
		SessionID  sdk.SessionId  `json:"sessionId"`
		ToolCallID sdk.ToolCallId `json:"toolCallId"`
	}
	if json.Unmarshal(meta[scopeKey], &scope) != nil || scope.SessionID == "" {
		return b
	}
	delete(meta, scopeKey)
	params["sessionId"], _ = json.Marshal(scope.SessionID)
	if scope.ToolCallID != "" {
		params["toolCallId"], _ = json.Marshal(scope.ToolCallID)
	}
	if len(meta) == 0 {
		delete(params, "_meta")
	} else {
		params["_meta"], _ = json.Marshal(meta)
	}
	var err error
	if m["params"], err = json.Marshal(params); err != nil {
		return b
	}
	out, err := json.Marshal(m)
	if err != nil {
		return b
	}
	if len(m["id"]) > 0 {
		c.mu.Lock()
		c.asked[askKey{scope.SessionID, scope.ToolCallID}] = string(m["id"])
		c.mu.Unlock()
	}
	if bytes.HasSuffix(b, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}
