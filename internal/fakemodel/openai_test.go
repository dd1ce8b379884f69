package fakemodel

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestOpenAIServer(t *testing.T) {
	s, err := StartOpenAI(Call("demo_tool", map[string]any{"x": 1}), Text("héllo wörld, in pieces"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddError(429, "slow down")

	// Not streamed: one chat.completion with the tool call.
	resp := post(t, s.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"demo_tool"}}]}`)
	var c struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	tc := c.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Function.Name != "demo_tool" || tc[0].Function.Arguments != `{"x":1}` || c.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("%+v", c)
	}
	// Streamed: the text in pieces that split no character, then [DONE].
	resp = post(t, s.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	body, _ := io.ReadAll(resp.Body)
	var text strings.Builder
	pieces := 0
	for _, line := range strings.Split(string(body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if s := ch.Choices[0].Delta.Content; s != "" {
			pieces++
			text.WriteString(s)
		}
	}
	if text.String() != "héllo wörld, in pieces" || pieces < 3 || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Fatalf("%d pieces %q\n%s", pieces, text.String(), body)
	}
	// A scripted error, then an exhausted script, then an unknown path.
	if resp = post(t, s.URL+"/v1/chat/completions", `{"model":"m"}`); resp.StatusCode != 429 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp = post(t, s.URL+"/v1/chat/completions", `{"model":"m"}`)
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), Exhausted) {
		t.Fatalf("%s", b)
	}
	if resp = post(t, s.URL+"/v1/models", `{}`); resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if n := len(s.Requests()); n != 5 || s.Left() != 0 {
		t.Fatalf("%d requests, %d left", n, s.Left())
	}
}
