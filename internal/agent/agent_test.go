package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/agent"
	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/model"
)

type liveContext struct {
	mu sync.Mutex
	c  *ide.Context
}

func (l *liveContext) Context() *ide.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c
}

func (l *liveContext) set(path string, line int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c = &ide.Context{WorkspaceState: &ide.WorkspaceState{OpenFiles: []ide.File{{Path: path, IsActive: true, Cursor: &ide.Cursor{Line: line, Character: 1}}}}}
}

// TestStreamingAndContextPerTurn: over chat completions, the reply's text
// arrives in several pieces as it streams; in a conversation, a change of
// the editor's context between two prompts reaches the second one as a
// delta, and the history carries the whole exchange.
func TestStreamingAndContextPerTurn(t *testing.T) {
	ws := t.TempDir()
	srv := startOpenAI(t, fakemodel.Text("The first answer, long enough to come in pieces."), fakemodel.Text("Second."))
	m, err := model.Open(context.Background(), model.Config{BaseURL: srv.URL + "/v1", Model: "m"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctxSrc := &liveContext{}
	ctxSrc.set(filepath.Join(ws, "a.go"), 1)
	var pieces []string
	a := &agent.Agent{Model: m, Workspace: ws, IDE: ctxSrc, OnText: func(s string) { pieces = append(pieces, s) }}
	out := a.Run(context.Background(), "one")
	if out.Status != agent.Done || strings.Join(pieces, "") != "The first answer, long enough to come in pieces." || len(pieces) < 3 {
		t.Fatalf("%+v, pieces %q", out, pieces)
	}
	ctxSrc.set(filepath.Join(ws, "a.go"), 9)
	if out := a.Run(context.Background(), "two"); out.Status != agent.Done || out.Text != "Second." {
		t.Fatalf("%+v", out)
	}
	c1, _ := srv.Requests()[1].Chat()
	text := c1.Text()
	if !strings.Contains(text, "Here is the user's editor context as a JSON object") ||
		!strings.Contains(text, `"cursorMoved": {`) || !strings.Contains(text, `"line": 9,`) ||
		strings.Index(text, "cursorMoved") > strings.Index(text, "two") {
		t.Errorf("second request:\n%s", text)
	}
	if n := len(a.History()); n != 6 { // context, one, answer, delta, two, answer
		t.Errorf("history of %d messages", n)
	}
}

// scripted is a model answering from memory without any I/O, so that a
// benchmark measures gemkit's own work per turn and not a model's.
type scripted struct {
	replies []model.Reply
	i       int
}

func (s *scripted) Describe() string { return "scripted" }

func (s *scripted) Generate(_ context.Context, req model.Request, onText func(string)) (model.Reply, error) {
	r := s.replies[s.i%len(s.replies)]
	s.i++
	if onText != nil && r.Text != "" {
		onText(r.Text)
	}
	return r, nil
}

// BenchmarkTurn is gemkit's own overhead per model turn: the request
// assembled with the extensions summary and the IDE context, the reply
// handled (the demo extension's summary and tool list in the prompt), a
// built-in tool dispatched and its result put back, with the
// model answering from memory. ns/turn is per model turn.
func BenchmarkTurn(b *testing.B) {
	ws := b.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte(strings.Repeat("line of text\n", 200)), 0o644)
	args, _ := json.Marshal(map[string]string{"path": "a.txt"})
	extDir := filepath.Join(b.TempDir(), "demo")
	os.MkdirAll(filepath.Join(extDir, "tools"), 0o755)
	os.MkdirAll(filepath.Join(extDir, "docs"), 0o755)
	os.WriteFile(filepath.Join(extDir, "gemini-extension.json"), []byte(demoManifest), 0o644)
	for rel, body := range demoFiles {
		os.WriteFile(filepath.Join(extDir, rel), []byte(body), 0o755)
	}
	set, err := disclosure.LoadDir(extDir, ws)
	if err != nil {
		b.Fatal(err)
	}
	for _, proto := range []agent.Protocol{agent.Native, agent.Text} {
		b.Run(string(proto), func(b *testing.B) {
			m := &scripted{replies: []model.Reply{
				{Calls: []model.Call{{ID: "1", Name: "read_file", Args: args}}, Finish: model.FinishStop},
				{Text: "done", Finish: model.FinishStop},
			}}
			if proto == agent.Text {
				m.replies[0] = model.Reply{Text: `<tool_code>{"name": "read_file", "args": {"path": "a.txt"}}</tool_code>`, Finish: model.FinishStop}
			}
			ctxSrc := &liveContext{}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctxSrc.set(filepath.Join(ws, "a.txt"), i%50+1)
				a := &agent.Agent{Model: m, Set: set, Workspace: ws, IDE: ctxSrc, Protocol: proto}
				if out := a.Run(context.Background(), "read a.txt"); out.Status != agent.Done {
					b.Fatal(out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/turn")
		})
	}
}

// TestGeminiContextPerTurn: on the Gemini wire (genai), the editor's
// context is a user content of its own before the prompt, in full first and
// as a delta in the next prompt of the conversation.
func TestGeminiContextPerTurn(t *testing.T) {
	ws := t.TempDir()
	srv := startGemini(t, fakemodel.Text("one"), fakemodel.Text("two"))
	env := map[string]string{"GEMINI_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": srv.URL}
	m, err := model.Open(context.Background(), model.Config{Model: "gemini-test"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctxSrc := &liveContext{}
	ctxSrc.set(filepath.Join(ws, "a.go"), 1)
	a := &agent.Agent{Model: m, Workspace: ws, IDE: ctxSrc}
	a.Run(context.Background(), "first")
	ctxSrc.set(filepath.Join(ws, "b.go"), 2)
	if out := a.Run(context.Background(), "second"); out.Status != agent.Done || out.Text != "two" {
		t.Fatalf("%+v", out)
	}
	g := geminiTurn(t, srv, 1)
	var texts []string
	for _, c := range g.Contents {
		if c.Role == "user" && len(c.Parts) == 1 {
			texts = append(texts, c.Parts[0].Text)
		}
	}
	if len(texts) != 4 || !strings.HasPrefix(texts[0], "Here is the user's editor context as a JSON object.") || texts[1] != "first" ||
		!strings.HasPrefix(texts[2], "Here is a summary of changes in the user's editor context") ||
		!strings.Contains(texts[2], `"activeFileChanged": {`) || texts[3] != "second" {
		t.Errorf("user contents %q", texts)
	}
	if srv.Turns()[1].Model != "gemini-test" {
		t.Errorf("model %q", srv.Turns()[1].Model)
	}
}

// TestBadArguments: arguments that are not a JSON object (a model's
// broken JSON arrives as a JSON string) get an error the model reads.
func TestBadArguments(t *testing.T) {
	m := &scripted{replies: []model.Reply{
		{Calls: []model.Call{{ID: "1", Name: "read_file", Args: json.RawMessage(`"{\"path\": "`)}}, Finish: model.FinishStop},
		{Text: "ok", Finish: model.FinishStop},
	}}
	a := &agent.Agent{Model: m, Workspace: t.TempDir()}
	if out := a.Run(context.Background(), "go"); out.Status != agent.Done {
		t.Fatalf("%+v", out)
	}
	res := a.History()[2].Results
	if len(res) != 1 || !res[0].IsError || !strings.Contains(res[0].Text, "must be a JSON object") {
		t.Errorf("%+v", res)
	}
	if _, err := json.Marshal(a.History()); err != nil {
		t.Errorf("the history is not JSON: %v", err)
	}
}

// TestTooManyCalls: one reply runs at most MaxCallsPerTurn calls; the rest
// are answered with an error.
func TestTooManyCalls(t *testing.T) {
	var calls []model.Call
	for i := 0; i < agent.MaxCallsPerTurn+3; i++ {
		calls = append(calls, model.Call{ID: fmt.Sprint(i), Name: "list_files", Args: json.RawMessage("{}")})
	}
	m := &scripted{replies: []model.Reply{{Calls: calls, Finish: model.FinishStop}, {Text: "ok", Finish: model.FinishStop}}}
	a := &agent.Agent{Model: m, Workspace: t.TempDir()}
	if out := a.Run(context.Background(), "go"); out.Status != agent.Done {
		t.Fatalf("%+v", out)
	}
	res := a.History()[2].Results
	if len(res) != len(calls) || res[agent.MaxCallsPerTurn-1].IsError || !res[agent.MaxCallsPerTurn].IsError {
		t.Errorf("%d results", len(res))
	}
}
