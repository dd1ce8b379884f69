package agent_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestTurnsSeparated: the words of successive model turns, with a tool
// call between them, are not run together on standard output.
func TestTurnsSeparated(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t,
		fakemodel.Reply{Text: "Let me look.", Calls: []fakemodel.FunctionCall{{Name: "list_files", Args: map[string]any{}}}},
		fakemodel.Text("Done."))
	stdout, code, stderr := f.runText(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "look")
	if code != 0 || stdout != "Let me look.\nDone.\n" {
		t.Errorf("exit %d, stdout %q\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestVLLMTextProtocol: vLLM started without --enable-auto-tool-choice
// refuses any request with tools ("auto" tool choice requires …, the
// message vllm/entrypoints/openai/serving_chat.py returns); the agent
// turns to the text protocol, and a call written in the plan's form, as
// the summary's examples show it, runs.
func TestVLLMTextProtocol(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t,
		fakemodel.Text(`Counting. <tool_code>demo_count(word="vllm", times=2)</tool_code>`),
		fakemodel.Text("Counted twice."))
	srv.RefuseToolsWith(`"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`)
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "count")
	if code != 0 || tr.Status != "done" || tr.Text != "Counted twice." || !strings.Contains(stderr+eventTexts(tr), "switching to the text protocol") {
		t.Fatalf("exit %d %+v\nstderr:\n%s", code, tr, stderr)
	}
	reqs := srv.Requests()
	last, _ := reqs[len(reqs)-1].Chat()
	if !strings.Contains(last.Text(), `<tool_result name="demo_count" status="ok">`) || !strings.Contains(last.Text(), `"word":"vllm","times":2`) {
		t.Errorf("last request:\n%s", last.Text())
	}
}

// TestLlamaCppTextProtocol: llama.cpp's server started without --jinja
// refuses every request with tools with a 500 (oaicompat_chat_params_parse
// in tools/server/server-common.cpp throws std::runtime_error("tools param
// requires --jinja flag"); ex_wrapper in tools/server/server.cpp answers it
// with format_error_response's ERROR_TYPE_SERVER, code 500, type
// "server_error"). The refusal is not retried: the agent turns to the
// text protocol at once, and the plan's call form runs.
func TestLlamaCppTextProtocol(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t,
		fakemodel.Text(`<tool_code>demo_count(word="llama", times=2)</tool_code>`),
		fakemodel.Text("Counted."))
	srv.RefuseToolsAs(500, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`)
	start := time.Now()
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "count")
	if code != 0 || tr.Status != "done" || tr.Text != "Counted." {
		t.Fatalf("exit %d %+v\nstderr:\n%s", code, tr, stderr)
	}
	reqs := srv.Requests()
	withTools := 0
	for _, r := range reqs {
		if c, _ := r.Chat(); len(c.Tools) > 0 {
			withTools++
		}
	}
	if withTools != 1 || len(reqs) != 3 || strings.Contains(stderr, "attempt") {
		t.Errorf("%d requests, %d with tools, in %v; want the refused one and two in the text protocol, no retry\nstderr:\n%s", len(reqs), withTools, time.Since(start), stderr)
	}
	last, _ := reqs[len(reqs)-1].Chat()
	if !strings.Contains(last.Text(), `<tool_result name="demo_count" status="ok">`) {
		t.Errorf("last request:\n%s", last.Text())
	}
}

func eventTexts(tr transcript) string {
	var b strings.Builder
	for _, e := range tr.Events {
		b.WriteString(e.Text + "\n")
	}
	return b.String()
}

// TestChatRetryInTmux drives `gemkit chat` in a terminal against a
// Gemini-shaped server: a free-tier 429 with a retry delay shows the wait
// on one line and the turn completes; a turn whose model reply after
// tool results is empty leaves the conversation usable, and the next
// turn is sent without an empty part (the server answers such a request
// with the Gemini API's 400, as the real one does); Ctrl-C ends a wait.
func TestChatRetryInTmux(t *testing.T) {
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	f := newFixture(t)
	sseOf := func(chunk string) string { return "data: " + chunk + "\r\n\r\n" }
	var mu sync.Mutex
	var bodies []string
	// The 429 as the Gemini API sends it to the free tier (RetryInfo and
	// the words; googleQuotaErrors.ts reads both).
	quota := `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 2.2s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"2s"}]}}`
	steps := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			io.WriteString(w, quota)
		},
		func(w http.ResponseWriter) {
			io.WriteString(w, sseOf(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello after the wait."}]},"finishReason":"STOP","index":0}]}`))
		},
		func(w http.ResponseWriter) {
			io.WriteString(w, sseOf(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"q7","name":"list_files","args":{}}}]},"finishReason":"STOP","index":0}]}`))
		},
		// Gemini ends a turn after function responses with no text at
		// times: STOP and an empty part.
		func(w http.ResponseWriter) {
			io.WriteString(w, sseOf(`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":120,"totalTokenCount":120}}`))
		},
		func(w http.ResponseWriter) {
			io.WriteString(w, sseOf(`{"candidates":[{"content":{"role":"model","parts":[{"text":"The next turn works."}]},"finishReason":"STOP","index":0}]}`))
		},
		// A wait of a minute, which Ctrl-C cuts short.
		func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(429)
			io.WriteString(w, strings.Replace(quota, `"2s"`, `"60s"`, 1))
		},
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, string(b))
		mu.Unlock()
		var req struct {
			Contents []struct {
				Parts []map[string]any `json:"parts"`
			} `json:"contents"`
		}
		json.Unmarshal(b, &req)
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if len(p) == 0 {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					io.WriteString(w, `{"error":{"code":400,"message":"* GenerateContentRequest.contents[3].parts[0].data: required oneof field 'data' must have one initialized field\n","status":"INVALID_ARGUMENT"}}`)
					return
				}
			}
		}
		if n >= len(steps) {
			http.Error(w, "no more steps", 500)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		steps[n](w)
	}))
	defer hs.Close()

	p := startChat(t, f, tmux, []string{"GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL=" + hs.URL}, "--no-ide --retry-delay 1s")
	p.waitFor("Ctrl-D ends", 1)
	p.typeLine("hi")
	p.waitFor("Hello after the wait.", 1)
	s := p.screen()
	if strings.Count(s, "retrying in") != 1 || !strings.Contains(s, "quota or rate limit") || !strings.Contains(s, "attempt 2 of 10; Ctrl-C stops") {
		t.Errorf("no wait line:\n%s", s)
	}
	p.typeLine("list the files")
	p.waitFor("⚙ list_files → ok", 1)
	p.waitFor("> ", 3)
	p.typeLine("and now?")
	p.waitFor("The next turn works.", 1)
	if s := p.screen(); strings.Contains(s, "gemkit: ") && strings.Contains(s, "required oneof") {
		t.Errorf("an empty part was sent:\n%s", s)
	}
	p.typeLine("once more")
	p.waitFor("retrying in 1m", 1)
	p.run("send-keys", "-t", "chat", "C-c")
	p.waitFor("(turn stopped)", 1)
	p.run("send-keys", "-t", "chat", "C-d")
	p.waitFor("chat ended with 0", 1)
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 6 || !strings.Contains(bodies[4], `{"role":"model","parts":[{"text":"(no reply)"}]}`) ||
		!strings.Contains(bodies[4], `"functionResponse":{"id":"q7","name":"list_files"`) {
		t.Errorf("%d requests; the last:\n%s", len(bodies), bodies[len(bodies)-1])
	}
	t.Logf("the chat as shown:\n%s", p.screen())
}

// TestTextProtocolEmptyEnd: in the text protocol, a model may end its
// turn without words after the results of its blocks, as after native
// function results (Gemini CLI's stream validation allows it there).
func TestTextProtocolEmptyEnd(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t, fakemodel.Text("<tool_code>list_files()</tool_code>"), fakemodel.Text(""))
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "--tool-protocol", "text", "--max-attempts", "1", "list")
	if code != 0 || tr.Status != "done" || tr.Turns != 2 {
		t.Errorf("exit %d %+v\nstderr:\n%s", code, tr, stderr)
	}
}

// TestUnfinishedReplyExit: a reply that did not finish ends `gemkit run`
// with exit 2 and words saying so, never exit 0 with nothing done.
func TestUnfinishedReplyExit(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t)
	// OpenRouter's ending of a failed generation: finish_reason "error".
	srv.AddFinish(fakemodel.Text("Half a rep"), "error")
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "--max-attempts", "1", "hi")
	if code != 2 || tr.Status != "error" || !strings.Contains(tr.Error, "did not finish") || !strings.Contains(tr.Error, `finish_reason "error"`) {
		t.Errorf("exit %d %+v\nstderr:\n%s", code, tr, stderr)
	}
}
