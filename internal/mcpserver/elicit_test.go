package mcpserver_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// elicitation is an elicitation/create request as a client received it.
type elicitation struct {
	Mode            string         `json:"mode"`
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requestedSchema"`
}

// consented reports whether f's store has consent on record for gated:
// `gemkit extensions consent gated` exits 0 only then.
func consented(t *testing.T, f *fixture) bool {
	t.Helper()
	_, err := f.gemkit("extensions", "consent", "gated")
	return err == nil
}

// checkQuestion checks the question a client was asked: the extension,
// the tool, its permissions, and what accepting records.
func checkQuestion(t *testing.T, asked []elicitation) {
	t.Helper()
	if len(asked) != 1 {
		t.Fatalf("%d questions asked, want 1: %+v", len(asked), asked)
	}
	q := asked[0]
	for _, want := range []string{`Extension "gated" wants to run its tool gated_hello. Its tools may: read files in your home directory; `, "gemkit extensions consent gated --grant"} {
		if !strings.Contains(q.Message, want) {
			t.Errorf("the question lacks %q:\n%s", want, q.Message)
		}
	}
	if q.Mode != "form" && q.Mode != "" || q.RequestedSchema["type"] != "object" {
		t.Errorf("question %+v", q)
	}
}

// TestElicitConsent: a client that offers elicitation is asked for
// consent when a tool has none, in the client's interface rather than
// through the model: the TypeScript SDK's v1 client on an older revision
// (the SDK sends elicitation/create) and its v2 client on 2026-07-28 (an
// input_required result, then the call again with the answer), over stdio
// and Streamable HTTP. Accepting records consent, as `gemkit extensions
// consent gated --grant` does, and the tool runs, and runs again without a
// question; declining runs nothing and records nothing.
func TestElicitConsent(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		for _, answer := range []string{"accept", "decline"} {
			t.Run("v1_"+transport+"_"+answer, func(t *testing.T) {
				f := newFixture(t)
				env := []string{"ELICIT=" + answer}
				var c *sdkClient
				if transport == "stdio" {
					c = startClient(t, f, env, "stdio", f.bin, "mcp", "--workspace", f.ws)
				} else {
					url, token := startHTTP(t, f)
					c = startClient(t, f, append(env, "GEMKIT_MCP_TOKEN="+token), "http", url)
				}
				res := c.call(map[string]any{"op": "callTool", "name": "gated_hello"})
				var asked []elicitation
				c.do(map[string]any{"op": "elicited"}, &asked)
				checkQuestion(t, asked)
				checkAnswer(t, f, answer, res)
				if answer == "accept" {
					if again := c.call(map[string]any{"op": "callTool", "name": "gated_hello"}); again.text() != "hello\n" {
						t.Errorf("second call: %+v", again)
					}
					c.do(map[string]any{"op": "elicited"}, &asked)
					if len(asked) != 1 {
						t.Errorf("asked again after consent: %+v", asked)
					}
				}
			})
			t.Run("v2_"+transport+"_"+answer, func(t *testing.T) {
				node, interop := gemkittest.Interop(t, "@modelcontextprotocol/client/package.json")
				f := newFixture(t)
				args := []string{"mcp-client-v2.mjs", "stdio", f.bin, "mcp", "--workspace", f.ws}
				env := append(f.env(), "CALL=gated_hello", "CALL_AGAIN=1", "ELICIT="+answer)
				if transport == "http" {
					url, token := startHTTP(t, f)
					args = []string{"mcp-client-v2.mjs", "http", url}
					env = append(env, "GEMKIT_MCP_TOKEN="+token)
				}
				cmd := exec.Command(node, args...)
				cmd.Dir, cmd.Env = interop, env
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("%v\n%s", err, stderr.String())
				}
				var got struct {
					Version  string
					Call     toolResult
					Again    toolResult
					Elicited []elicitation
				}
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				if got.Version != "2026-07-28" {
					t.Errorf("negotiated %s", got.Version)
				}
				checkAnswer(t, f, answer, got.Call)
				if answer == "accept" {
					checkQuestion(t, got.Elicited)
					if got.Again.text() != "hello\n" {
						t.Errorf("second call: %+v", got.Again)
					}
				} else if len(got.Elicited) != 2 {
					// Declined, the second call asks again.
					t.Errorf("questions %+v", got.Elicited)
				}
			})
		}
	}
}

// checkAnswer checks a call's result and the consent record after the
// person answered.
func checkAnswer(t *testing.T, f *fixture, answer string, res toolResult) {
	t.Helper()
	switch answer {
	case "accept":
		if res.IsError || res.text() != "hello\n" {
			t.Errorf("accepted, the call gave %+v", res)
		}
		if !consented(t, f) {
			t.Error("accepted, but no consent on record")
		}
	default:
		if res.IsError || !strings.HasPrefix(res.text(), "Not run: the person declined to let extension gated run its tools") {
			t.Errorf("declined, the call gave %+v", res)
		}
		if consented(t, f) {
			t.Error("declined, but consent is on record")
		}
	}
}
