package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestTextProtocol: a model without function calling (the endpoint
// refuses tools, as Ollama does) gets the text protocol: its <tool_code>
// and <read_doc> blocks run (a doc and an agent skill, each named with
// or without its extension), and malformed blocks get a corrective
// message instead of a crash.
func TestTextProtocol(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t,
		fakemodel.Text("I will count.\n<tool_code>{\"name\": \"demo_count\", \"args\": {\"word\": \"z\", \"times\": 1}}</tool_code>\nand read <read_doc>guide</read_doc> <read_doc>skill:triage</read_doc>"),
		fakemodel.Text("<tool_code>{not json}</tool_code> <tool_code>demo_count(\"z\")</tool_code> <read_doc>demo/guide</tool_code> <tool_code>{\"name\": \"demo_count\""),
		fakemodel.Text("<tool_code>\n```json\n{\"name\": \"list_files\", \"args\": {}}\n```\n</tool_code>"),
		fakemodel.Text("Done, without tools."))
	srv.RefuseTools()
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "--model", "small", "go")
	if code != 0 || tr.Status != "done" || tr.Text != "Done, without tools." {
		t.Fatalf("exit %d %+v\n%s", code, tr, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 { // the refused one with tools, then four
		t.Fatalf("%d requests", len(reqs))
	}
	c1, _ := reqs[1].Chat()
	if len(c1.Tools) != 0 || !strings.Contains(c1.Text(), "<tool_code>") || !strings.Contains(c1.Text(), "demo_count") {
		t.Errorf("the text protocol is not explained:\n%s", c1.Text())
	}
	last := func(i int) string {
		c, _ := reqs[i].Chat()
		m := c.Messages[len(c.Messages)-1]
		s, _ := m["content"].(string)
		return s
	}
	r2 := last(2)
	if !strings.Contains(r2, `<tool_result name="demo_count" status="ok">`) || !strings.Contains(r2, `"word":"z"`) ||
		!strings.Contains(r2, `<tool_result name="read_doc" status="ok">`) || !strings.Contains(r2, "The count tool repeats a word.") ||
		!strings.Contains(r2, triageBody) {
		t.Errorf("results of the first blocks:\n%s", r2)
	}
	r3 := last(3)
	for _, want := range []string{"is not valid JSON", "are not a JSON object", "was closed with </tool_code>", "is not closed"} {
		if !strings.Contains(r3, want) {
			t.Errorf("no corrective message %q in:\n%s", want, r3)
		}
	}
	if r4 := last(4); !strings.Contains(r4, "a.txt") {
		t.Errorf("fenced block not run:\n%s", r4)
	}

	// Asked for by flag, on a Gemini endpoint that has function calling.
	gs := startGemini(t, fakemodel.Text("<read_doc>demo/guide</read_doc>"), fakemodel.Text("read"))
	g := *f
	g.extra = nil
	g.gemini(gs)
	if tr, code, _ := g.run(t, "--no-ide", "--tool-protocol", "text", "go"); code != 0 || tr.Text != "read" {
		t.Fatalf("exit %d %+v", code, tr)
	}
	first, second := geminiTurn(t, gs, 0), geminiTurn(t, gs, 1)
	if len(first.Tools) != 0 || !strings.Contains(second.Text(), "The count tool repeats a word.") {
		t.Errorf("tools %d; second request:\n%s", len(first.Tools), second.Text())
	}
}

// TestLimits: each limit ends the run with its own status and exit code 3
// (turns, output tokens), and a tool over its time is killed with an error
// the model reads.
func TestLimits(t *testing.T) {
	f := newFixture(t)
	t.Run("max turns", func(t *testing.T) {
		srv := startOpenAI(t)
		for i := 0; i < 5; i++ {
			srv.Add(fakemodel.Call("list_files", nil))
		}
		tr, code, _ := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "--max-turns", "3", "loop")
		if code != 3 || tr.Status != "max_turns" || tr.Turns != 3 || len(srv.Requests()) != 3 || !strings.Contains(tr.Error, "--max-turns") {
			t.Errorf("exit %d %+v, %d requests", code, tr, len(srv.Requests()))
		}
	})
	t.Run("max output tokens", func(t *testing.T) {
		srv := startOpenAI(t)
		srv.AddFinish(fakemodel.Text("a long answ"), "length")
		tr, code, _ := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "--max-output-tokens", "7", "talk")
		c, _ := srv.Requests()[0].Chat()
		if code != 3 || tr.Status != "max_tokens" || c.MaxTokens != 7 || !strings.Contains(tr.Error, "7 tokens") {
			t.Errorf("exit %d %+v, max_tokens sent %d", code, tr, c.MaxTokens)
		}
	})
	t.Run("tool timeout", func(t *testing.T) {
		srv := startOpenAI(t, fakemodel.Call("demo_slow", nil), fakemodel.Text("ok"))
		start := time.Now()
		tr, code, _ := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "--tool-timeout", "1s", "slow")
		c, _ := srv.Requests()[1].Chat()
		res := c.ToolResults()
		if code != 0 || tr.Status != "done" || len(res) != 1 || !strings.Contains(res[0], "did not finish within 1s") {
			t.Errorf("exit %d %+v, results %q", code, tr, res)
		}
		if time.Since(start) > time.Minute {
			t.Errorf("the slow tool was not stopped")
		}
	})
}

// TestAPIErrors: API failures end the run with exit 2 and words saying
// what happened and what to do, for both wire formats; the ones that may
// pass (429, 5xx) are first tried again, with one line on stderr per
// wait, the others are not.
func TestAPIErrors(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name     string
		status   int
		msg      string
		want     string
		attempts int
	}{
		{"quota", 429, "Rate limit reached", "quota or rate limit", 3},
		{"auth", 401, "Incorrect API key provided", "API key was refused", 1},
		{"not found", 404, "model 'nope' not found", "model was not found", 1},
		{"server", 500, "boom", "server failed", 3},
	}
	retry := []string{"--max-attempts", "3", "--retry-delay", "10ms"}
	check := func(t *testing.T, tr transcript, code int, stderr string, requests, attempts int, msg, want string) {
		t.Helper()
		if code != 2 || tr.Status != "error" || !strings.Contains(tr.Error, want) || !strings.Contains(tr.Error, msg) || requests != attempts {
			t.Errorf("exit %d %+v after %d requests, want %d", code, tr, requests, attempts)
		}
		if waits := strings.Count(stderr, "; retrying in "); waits != attempts-1 {
			t.Errorf("%d wait lines, want %d:\n%s", waits, attempts-1, stderr)
		}
		if attempts > 1 && !strings.Contains(tr.Error, "after 3 attempts") {
			t.Errorf("the error does not say it was tried 3 times: %s", tr.Error)
		}
	}
	for _, c := range cases {
		t.Run("openai "+c.name, func(t *testing.T) {
			srv := startOpenAI(t)
			for range c.attempts {
				srv.AddError(c.status, c.msg)
			}
			tr, code, stderr := f.run(t, append(retry, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "hi")...)
			check(t, tr, code, stderr, len(srv.Requests()), c.attempts, c.msg, c.want)
		})
		t.Run("gemini "+c.name, func(t *testing.T) {
			var requests atomic.Int32
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": c.status, "message": c.msg, "status": "X"}})
			}))
			defer hs.Close()
			g := *f
			g.extra = []string{"GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL=" + hs.URL}
			tr, code, stderr := g.run(t, append(retry, "--no-ide", "hi")...)
			check(t, tr, code, stderr, int(requests.Load()), c.attempts, c.msg, c.want)
		})
	}
	t.Run("openai safety", func(t *testing.T) {
		srv := startOpenAI(t)
		srv.AddFinish(fakemodel.Text(""), "content_filter")
		tr, code, _ := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "hi")
		if code != 2 || !strings.Contains(tr.Error, "safety filter") || !strings.Contains(tr.Error, "Rephrase") {
			t.Errorf("exit %d %+v", code, tr)
		}
	})
	t.Run("gemini safety", func(t *testing.T) {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte(`data: {"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"SAFETY","index":0}]}` + "\r\n\r\n"))
		}))
		defer hs.Close()
		g := *f
		g.extra = []string{"GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL=" + hs.URL}
		tr, code, _ := g.run(t, "--no-ide", "hi")
		if code != 2 || !strings.Contains(tr.Error, "safety filter") {
			t.Errorf("exit %d %+v", code, tr)
		}
	})
	t.Run("no key", func(t *testing.T) {
		g := *f
		g.extra = nil
		_, code, stderr := g.runText(t, "--no-ide", "hi")
		if code != 2 || !strings.Contains(stderr, "GEMINI_API_KEY") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
}

func (f *fixture) runText(t *testing.T, args ...string) (string, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := f.cmd(ctx, append([]string{"run"}, args...)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	if err != nil {
		code = c.ProcessState.ExitCode()
	}
	return stdout.String(), code, stderr.String()
}

// TestCancel: SIGINT while the model streams, while a tool runs and while
// a diff waits in the IDE ends `gemkit run` with 130; the tool's process
// is gone, the diff is closed in the editor and the file is untouched.
func TestCancel(t *testing.T) {
	f := newFixture(t)
	interrupt := func(t *testing.T, args []string, when <-chan struct{}) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := f.cmd(ctx, append([]string{"run"}, args...)...)
		var stderr bytes.Buffer
		c.Stderr = &stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-when:
		case <-time.After(time.Minute):
			t.Fatal("never reached the point to interrupt")
		}
		c.Process.Signal(syscall.SIGINT)
		c.Wait()
		return c.ProcessState.ExitCode(), stderr.String()
	}
	t.Run("streaming", func(t *testing.T) {
		srv := startOpenAI(t)
		srv.AddStall(fakemodel.Text("the beginning of a long reply"))
		code, stderr := interrupt(t, []string{"--no-ide", "--base-url", srv.URL + "/v1", "-m", "m", "hi"}, srv.Stalled())
		if code != 130 || !strings.Contains(stderr, "interrupted") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
	t.Run("tool", func(t *testing.T) {
		srv := startOpenAI(t, fakemodel.Call("demo_slow", nil), fakemodel.Text("never"))
		// The tool's private temporary folder is its own tmpfs, out of
		// the test's sight: its sleep is found by command line.
		started := make(chan struct{})
		go func() {
			// The sandboxed tool's sleep is found only by reading /proc;
			// interrupt fails the test if it is not found in a minute.
			if gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool { return len(sleepers()) > 0 }) {
				close(started)
			}
		}()
		code, stderr := interrupt(t, []string{"--no-ide", "--base-url", srv.URL + "/v1", "-m", "m", "hi"}, started)
		if code != 130 {
			t.Errorf("exit %d: %s", code, stderr)
		}
		// The tool runs in its own pid namespace: look for its sleep by
		// command line.
		var left []string
		if !gemkittest.Poll(10*time.Second, 50*time.Millisecond, func() bool { left = sleepers(); return len(left) == 0 }) {
			t.Fatalf("the tool's processes still run: %v", left)
		}
		if len(srv.Requests()) != 1 {
			t.Errorf("%d requests after the interrupt", len(srv.Requests()))
		}
	})
	t.Run("diff", func(t *testing.T) {
		g := newFixture(t)
		ed := startEditor(t, g)
		srv := startOpenAI(t, fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "new\n"}))
		opened := make(chan struct{})
		var closed any
		go func() {
			<-ed.diffs
			close(opened)
		}()
		code, stderr := func() (int, string) {
			ff := g
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := ff.cmd(ctx, "run", "--base-url", srv.URL+"/v1", "-m", "m", "hi")
			var se bytes.Buffer
			c.Stderr = &se
			c.Start()
			select {
			case <-opened:
			case <-time.After(time.Minute):
				t.Fatal("no diff")
			}
			c.Process.Signal(syscall.SIGINT)
			c.Wait()
			return c.ProcessState.ExitCode(), se.String()
		}()
		if code != 130 {
			t.Errorf("exit %d: %s", code, stderr)
		}
		select {
		case d := <-ed.diffs:
			closed = d["closed"]
		case <-time.After(30 * time.Second):
		}
		if closed != filepath.Join(g.ws, "a.txt") {
			t.Errorf("the diff was not closed in the editor (%v)", closed)
		}
		if got, _ := os.ReadFile(filepath.Join(g.ws, "a.txt")); string(got) != "alpha\nbeta\n" {
			t.Errorf("the file changed: %q", got)
		}
	})
}

// sleepers lists the processes running the slow tool's sleep.
func sleepers() []string {
	var out []string
	m, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range m {
		data, _ := os.ReadFile(p)
		if strings.Contains(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})), "sleep 6029") {
			out = append(out, p)
		}
	}
	return out
}
