package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

func TestMain(m *testing.M) {
	if sandbox.IsChild() {
		os.Exit(sandbox.ChildMain())
	}
	os.Exit(gemkittest.Main(m))
}

// fixture is a private home with the demo extension linked (consent
// recorded) and a workspace folder below it.
type fixture struct {
	bin, root, home, ws string
	extra               []string
}

const demoManifest = `{"name": "demo", "version": "1.0.0", "description": "Tools for the agent tests.",
 "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [
  {"name": "count", "description": "Repeats a word.", "executable": "tools/count.sh", "runtime": "shell", "output": "json",
   "args": [{"name": "word", "type": "string", "description": "The word."}, {"name": "times", "type": "integer"}]},
  {"name": "write", "description": "Tries to write into the workspace.", "executable": "tools/write.sh", "runtime": "shell"},
  {"name": "slow", "description": "Sleeps.", "executable": "tools/slow.sh", "runtime": "shell"}],
 "docs": [{"name": "guide", "description": "How the demo tools work.", "file": "docs/guide.md"}]}`

const guideText = "# Demo guide\n\nThe count tool repeats a word.\n"

// triageBody is the instructions of the demo's agent skill.
const triageBody = "# Triage\n\nLabel each report P0 to P3."

var demoFiles = map[string]string{
	"tools/count.sh":         `printf '{"word":"%s","times":%s,"files":"%s"}\n' "$2" "$4" "$(ls | tr '\n' ' ')"` + "\n",
	"tools/write.sh":         "echo data > \"$PWD/written.txt\" || exit 3\n",
	"tools/slow.sh":          "echo $$ > \"$TMPDIR/slow.pid\"; sleep 6029\n",
	"docs/guide.md":          guideText,
	"skills/triage/SKILL.md": "---\nname: triage\ndescription: Sort incoming bug reports by severity.\n---\n" + triageBody + "\n",
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{bin: gemkittest.Gemkit(t), root: t.TempDir()}
	f.home = filepath.Join(f.root, "home")
	f.ws = filepath.Join(f.home, "ws")
	gemkittest.WriteFile(t, filepath.Join(f.ws, "a.txt"), "alpha\nbeta\n")
	src := filepath.Join(f.root, "src", "demo")
	gemkittest.WriteFile(t, filepath.Join(src, "gemini-extension.json"), demoManifest)
	for rel, body := range demoFiles {
		gemkittest.WriteFile(t, filepath.Join(src, rel), body)
		if strings.HasPrefix(rel, "tools/") {
			os.Chmod(filepath.Join(src, rel), 0o755)
		}
	}
	if out, err := f.cmd(context.Background(), "extensions", "link", "--consent", src).CombinedOutput(); err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	return f
}

func (f *fixture) env() []string {
	return append(gemkittest.AgentEnv(f.home, f.root), f.extra...)
}

func (f *fixture) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, f.bin, args...)
	c.Dir = f.ws
	c.Env = f.env()
	return c
}

type transcript struct {
	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error"`
	Turns    int    `json:"turns"`
	Text     string `json:"text"`
	Events   []struct {
		Type    string          `json:"type"`
		Name    string          `json:"name"`
		Args    json.RawMessage `json:"args"`
		Text    string          `json:"text"`
		IsError bool            `json:"isError"`
	} `json:"events"`
}

// run runs gemkit run --json with args and returns the transcript and
// the exit code.
func (f *fixture) run(t *testing.T, args ...string) (transcript, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := f.cmd(ctx, append([]string{"run", "--json"}, args...)...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var tr transcript
	if err := json.Unmarshal(stdout.Bytes(), &tr); err != nil {
		t.Fatalf("transcript: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return tr, code, stderr.String()
}

func (f *fixture) gemini(srv *fakemodel.Server) {
	f.extra = append(f.extra, "GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+srv.URL)
}

func startGemini(t *testing.T, script ...fakemodel.Reply) *fakemodel.Server {
	t.Helper()
	srv, err := fakemodel.Start(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func startOpenAI(t *testing.T, script ...fakemodel.Reply) *fakemodel.OpenAIServer {
	t.Helper()
	srv, err := fakemodel.StartOpenAI(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func geminiTurn(t *testing.T, srv *fakemodel.Server, i int) fakemodel.GenerateRequest {
	t.Helper()
	turns := srv.Turns()
	if len(turns) <= i {
		t.Fatalf("only %d model turns", len(turns))
	}
	g, err := turns[i].Generate()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGeminiToolAndDoc: through the genai SDK, the summary (with the
// agent skill listed) is in the first request, a tool runs in the sandbox and its output goes back as
// a function response, a doc is read on demand, and a file is read.
func TestGeminiToolAndDoc(t *testing.T) {
	f := newFixture(t)
	srv := startGemini(t,
		fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 2}),
		fakemodel.Call("read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Call("read_file", map[string]any{"path": "a.txt"}),
		fakemodel.Call("demo_write", nil),
		fakemodel.Text("All done."))
	f.gemini(srv)
	tr, code, stderr := f.run(t, "--no-ide", "count hi twice")
	if code != 0 || tr.Status != "done" || tr.Text != "All done." {
		t.Fatalf("exit %d, transcript %+v\nstderr:\n%s", code, tr, stderr)
	}
	first := geminiTurn(t, srv, 0)
	if first.SystemInstruction == nil || !strings.Contains(first.Text(), "You have the following extensions available") ||
		!strings.Contains(first.Text(), "demo_count") || !strings.Contains(first.Text(), "guide") ||
		!strings.Contains(first.Text(), "  - **Skills**:\n    - `triage`: Sort incoming bug reports by severity.") {
		t.Errorf("the summary is not in the first request:\n%s", first.Text())
	}
	names := strings.Join(first.FunctionNames(), ",")
	for _, want := range []string{"demo_count", "read_doc", "read_file", "list_files", "propose_edit"} {
		if !strings.Contains(names, want) {
			t.Errorf("tool %s not offered: %s", want, names)
		}
	}
	if m := srv.Turns()[0].Model; m != "gemini-2.5-flash" {
		t.Errorf("model %q", m)
	}
	resp := geminiTurn(t, srv, 4).FunctionResponses()
	if len(resp) != 4 {
		t.Fatalf("%d function responses", len(resp))
	}
	out, _ := resp[0].Response["output"].(string)
	if !strings.Contains(out, `"word":"hi"`) || !strings.Contains(out, `"times":2`) || !strings.Contains(out, "a.txt") {
		t.Errorf("tool output %v", resp[0].Response)
	}
	if doc, _ := resp[1].Response["output"].(string); !strings.Contains(doc, "The count tool repeats a word.") {
		t.Errorf("doc %v", resp[1].Response)
	}
	if file, _ := resp[2].Response["output"].(string); file != "alpha\nbeta\n" {
		t.Errorf("read_file %v", resp[2].Response)
	}
	// The sandbox refused the write (read-only workspace): an error the
	// model reads, and no file.
	if _, ok := resp[3].Response["error"]; !ok {
		t.Errorf("the write tool did not fail: %v", resp[3].Response)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "written.txt")); err == nil {
		t.Error("the sandboxed tool wrote into the workspace")
	}
}

// TestOpenAIToolAndDoc: the same over chat completions against the
// chat-completions server, with text streamed in pieces.
func TestOpenAIToolAndDoc(t *testing.T) {
	f := newFixture(t)
	srv := startOpenAI(t,
		fakemodel.Reply{Text: "Let me count.", Calls: []fakemodel.FunctionCall{{Name: "demo_count", Args: map[string]any{"word": "yo", "times": 3}}}},
		fakemodel.Call("read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Text("The word was counted, and the guide read, in several streamed pieces."))
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "--model", "local-model", "count")
	if code != 0 || tr.Status != "done" || tr.Text != "The word was counted, and the guide read, in several streamed pieces." {
		t.Fatalf("exit %d, transcript %+v\nstderr:\n%s", code, tr, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	c0, _ := reqs[0].Chat()
	if !c0.Stream || c0.Model != "local-model" || !strings.Contains(c0.Text(), "You have the following extensions available") {
		t.Errorf("first request: stream %v model %q\n%s", c0.Stream, c0.Model, c0.Text())
	}
	if !strings.Contains(strings.Join(c0.ToolNames(), ","), "demo_count") {
		t.Errorf("tools %v", c0.ToolNames())
	}
	c2, _ := reqs[2].Chat()
	res := c2.ToolResults()
	if len(res) != 2 || !strings.Contains(res[0], `"word":"yo"`) || !strings.Contains(res[1], "The count tool repeats a word.") {
		t.Errorf("tool results %q", res)
	}
}
