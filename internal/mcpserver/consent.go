package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/toolrun"
)

// A tool whose extension has no consent on record asks the person through
// the client, when the client offers elicitation (Claude Code 2.1.330
// does; Gemini CLI 0.61 does not): the question goes to the
// client's own interface, the person answers there, and the model neither
// sees the question nor can answer it, since it only writes a tool's
// arguments. On protocol 2026-07-28 the call answers input_required with
// the question and the client calls again with the answer (multi
// round-trip requests); before it, the SDK sends elicitation/create itself
// and calls the handler again with the answer.
//
// Accepting records consent exactly as `gemkit extensions consent EXT
// --grant` does (withdrawn with --revoke); declining or cancelling runs
// nothing. The request state is a digest of the question, so an answer
// counts only for the permissions (and changed files) it was given to:
// when they changed meanwhile, the person is asked again.

// consentInput is the key of the consent question among a call's input
// requests.
const consentInput = "consent"

// consentAnswer is the person's answer, carried in a retried call's
// context to the runner's Ask.
type consentAnswer struct {
	accepted bool
	// question is the digest of the question answered.
	question string
}

type answerKey struct{}

// answerFrom returns the answer a retried call carries, or nil.
func answerFrom(ctx context.Context) *consentAnswer {
	a, _ := ctx.Value(answerKey{}).(*consentAnswer)
	return a
}

// questionDigest identifies a consent question: the extension, the
// files changed since an earlier consent and the permissions.
func questionDigest(q toolrun.ConsentRequest) string {
	sum := sha256.Sum256([]byte(q.Extension + "\x00" + q.Notice + "\x00" + strings.Join(q.Lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// Ask is the toolrun.Asker of a Runner whose tools a Server serves: the
// answer the retried call carries, when it was given to this very
// question (accepting records consent). Without one nobody was asked,
// and the call is refused as with no one to ask, with words saying how
// the person agrees; the client is asked (elicitation) where it offers
// to answer.
func Ask(ctx context.Context, q toolrun.ConsentRequest) (toolrun.Answer, error) {
	a := answerFrom(ctx)
	if a == nil || a.question != questionDigest(q) {
		return toolrun.Decline, toolrun.ErrNobodyAsked
	}
	return toolrun.AllowIf(a.accepted), nil
}

// withAnswer puts the answer of a retried call into ctx.
func withAnswer(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	res, ok := req.Params.InputResponses[consentInput].(*mcp.ElicitResult)
	if !ok || res == nil {
		return ctx
	}
	return context.WithValue(ctx, answerKey{}, &consentAnswer{
		accepted: res.Action == "accept",
		question: req.Params.RequestState,
	})
}

// canElicit reports whether the client takes a form elicitation: on
// 2026-07-28 from the capabilities each request carries, before it from
// those of initialize. A capability with neither mode is form mode.
func canElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// consentQuestion is the input_required result asking the person for
// consent to q, for the tool name.
func consentQuestion(q toolrun.ConsentRequest, tool string) *mcp.CallToolResult {
	// Claude Code shows the first three lines of a question and folds the
	// rest: the permissions go on one line, after the files changed since
	// an earlier consent, if any.
	var b strings.Builder
	if q.Notice != "" {
		b.WriteString(extension.Printable(q.Notice) + "\n")
	}
	perms := make([]string, len(q.Lines))
	for i, l := range q.Lines {
		perms[i] = extension.Printable(l)
	}
	ext := extension.Printable(q.Extension)
	fmt.Fprintf(&b, "Extension %q wants to run its tool %s. Its tools may: %s.\n", ext, tool, strings.Join(perms, "; "))
	fmt.Fprintf(&b, "Accept records your consent, as `gemkit extensions consent %s --grant` does (--revoke withdraws it), and the tool runs in its sandbox. Decline runs nothing.", ext)
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{consentInput: &mcp.ElicitParams{
			Mode:            "form",
			Message:         b.String(),
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		}},
		RequestState: questionDigest(q),
	}
}
