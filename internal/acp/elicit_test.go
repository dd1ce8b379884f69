package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// elicitPlan is the elicitation part of acp-client.mjs's plan.
type elicitPlan struct {
	Capabilities map[string]any   `json:"capabilities"`
	Answers      []map[string]any `json:"answers"`
}

// consentForm is an elicitation/create of the consent question as the
// client received it.
type consentForm struct {
	SessionID       string `json:"sessionId"`
	ToolCallID      string `json:"toolCallId"`
	Mode            string `json:"mode"`
	Message         string `json:"message"`
	Meta            any    `json:"_meta"`
	RequestedSchema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type  string `json:"type"`
			OneOf []struct {
				Const string `json:"const"`
				Title string `json:"title"`
			} `json:"oneOf"`
		} `json:"properties"`
		Required []string `json:"required"`
	} `json:"requestedSchema"`
}

// TestElicitConsent drives `gemkit acp` with the protocol's TypeScript
// client (@agentclientprotocol/sdk 2.4.0, whose client validates each
// request against ACP v1's schema before its handler sees it). A client
// that declares form elicitation is asked an extension tool's consent
// question in an elicitation/create of the session and the tool call, not
// in a permission request: "once" runs the tool and asks again next
// time; Decline runs nothing; "always" records consent, so the next call
// asks nothing. A client whose elicitation object declares no form mode
// (ACP v1: form support is then not advertised) is asked in a permission
// request, as every client was before.
func TestElicitConsent(t *testing.T) {
	t.Parallel()
	call := func(n int) fakemodel.Reply {
		return fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": n})
	}
	f := newFixture(t, call(2), fakemodel.Text("Once."), call(3), fakemodel.Text("Declined."),
		call(4), fakemodel.Text("Always."), call(5), fakemodel.Text("Again."))
	// Changed since the person agreed at link: the tool asks.
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "count.sh"), `printf '{"word":"%s","times":%s}\n' "$2" "$4"`+"\n")
	os.Chmod(filepath.Join(f.src, "tools", "count.sh"), 0o755)
	r := drive(t, plan{
		Command: f.bin, Args: []string{"acp"}, Env: f.envMap(), Cwd: f.ws,
		Elicitation: &elicitPlan{Capabilities: map[string]any{"form": map[string]any{}}, Answers: []map[string]any{
			{"action": "accept", "content": map[string]any{"allow": "once"}},
			{"action": "decline"},
			{"action": "accept", "content": map[string]any{"allow": "always"}},
		}},
		Prompts: []planPrompt{textPrompt("Count twice."), textPrompt("Count thrice."), textPrompt("Count four times."), textPrompt("Count five times.")},
	})
	if r.Error != nil || r.SessionError != nil {
		t.Fatalf("error %+v, session/new %+v", r.Error, r.SessionError)
	}
	if perms := r.requestsOf("session/request_permission"); len(perms) != 0 {
		t.Errorf("a client that declares form elicitation got permission requests: %s", perms)
	}
	forms := r.requestsOf("elicitation/create")
	if len(forms) != 3 {
		t.Fatalf("%d elicitation requests, want 3: %s", len(forms), forms)
	}
	for i, raw := range forms {
		var q consentForm
		if err := json.Unmarshal(raw, &q); err != nil {
			t.Fatal(err)
		}
		choices := q.RequestedSchema.Properties["allow"].OneOf
		if q.SessionID != r.Session.SessionID || q.ToolCallID == "" || q.Mode != "form" || q.Meta != nil ||
			!strings.Contains(q.Message, `Extension "demo" wants to run demo_count.`) || !strings.Contains(q.Message, "this file of the extension changed: tools/count.sh") ||
			q.RequestedSchema.Type != "object" || len(choices) != 2 || choices[0].Const != "once" || choices[1].Const != "always" || choices[1].Title != "Always allow demo" {
			t.Errorf("question %d: %s", i, raw)
		}
	}
	want := []string{`\"times\":2`, "declined", `\"times\":4`, `\"times\":5`}
	for i, w := range want {
		if got := turnText(t, f.model, 2*i+1); !strings.Contains(got, w) {
			t.Errorf("turn %d does not carry %s: %s", 2*i+2, w, got)
		}
	}
}

// TestElicitationWithoutForm: a client whose elicitation object names
// no form mode is asked in a permission request.
func TestElicitationWithoutForm(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 2}), fakemodel.Text("Done."))
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "count.sh"), `printf '{"word":"%s","times":%s}\n' "$2" "$4"`+"\n")
	os.Chmod(filepath.Join(f.src, "tools", "count.sh"), 0o755)
	r := drive(t, plan{
		Command: f.bin, Args: []string{"acp"}, Env: f.envMap(), Cwd: f.ws,
		Elicitation: &elicitPlan{Capabilities: map[string]any{"url": map[string]any{}}},
		Permissions: []string{"allow_once"},
		Prompts:     []planPrompt{textPrompt("Count twice.")},
	})
	if n, m := len(r.requestsOf("session/request_permission")), len(r.requestsOf("elicitation/create")); n != 1 || m != 0 {
		t.Errorf("%d permission requests and %d elicitations, want 1 and 0", n, m)
	}
	if got := turnText(t, f.model, 1); !strings.Contains(got, `\"times\":2`) {
		t.Errorf("the tool did not run: %s", got)
	}
}

// TestElicitCancelled: a prompt cancelled while the consent question
// waits for the person ends "cancelled" at once, and the tool does not
// run.
func TestElicitCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 2}), fakemodel.Text("Done."))
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "count.sh"), `printf '{"word":"%s","times":%s}\n' "$2" "$4"`+"\n")
	os.Chmod(filepath.Join(f.src, "tools", "count.sh"), 0o755)
	r := drive(t, plan{
		Command: f.bin, Args: []string{"acp"}, Env: f.envMap(), Cwd: f.ws,
		Elicitation: &elicitPlan{Capabilities: map[string]any{"form": map[string]any{}}, Answers: []map[string]any{{"ignore": true}}},
		Prompts:     []planPrompt{{Blocks: textPrompt("Count twice.").Blocks, CancelAfterMs: ms(1500)}},
	})
	if len(r.Prompts) != 1 || r.Prompts[0].StopReason != "cancelled" || r.Prompts[0].AfterCancelMs == nil || *r.Prompts[0].AfterCancelMs > 2000 {
		t.Errorf("prompts %+v", r.Prompts)
	}
	if len(r.requestsOf("elicitation/create")) != 1 || len(f.model.Turns()) != 1 {
		t.Errorf("%d questions, %d model turns: the question was not asked, or the turn went on", len(r.requestsOf("elicitation/create")), len(f.model.Turns()))
	}
}
