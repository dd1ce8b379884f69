package acp_test

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
)

func TestMain(m *testing.M) {
	os.Exit(gemkittest.Main(m))
}

// fixture is a private home with the demo extension linked and a
// workspace below it.
type fixture struct {
	bin, root, home, ws, src string
	model                    *fakemodel.Server
	// noKey leaves the model's API key out of the environment.
	noKey bool
}

const demoManifest = `{"name": "demo", "version": "1.0.0", "description": "Tools for the ACP tests.",
 "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [
  {"name": "count", "description": "Repeats a word.", "executable": "tools/count.sh", "runtime": "shell", "output": "json",
   "args": [{"name": "word", "type": "string", "description": "The word."}, {"name": "times", "type": "integer"}]},
  {"name": "slow", "description": "Sleeps.", "executable": "tools/slow.sh", "runtime": "shell"}],
 "docs": [{"name": "guide", "description": "How the demo tools work.", "file": "docs/guide.md"}]}`

// slowSeconds is the demo's slow tool's sleep, a number no other test
// sleeps, so that its processes can be told apart.
const slowSeconds = "6047"

const guideText = "# Demo guide\n\nThe count tool repeats a word.\n"

func newFixture(t *testing.T, script ...fakemodel.Reply) *fixture {
	t.Helper()
	f := &fixture{bin: gemkittest.Gemkit(t), root: t.TempDir()}
	f.home = filepath.Join(f.root, "home")
	f.ws = filepath.Join(f.home, "ws")
	gemkittest.WriteFile(t, filepath.Join(f.ws, "a.txt"), "alpha\nbeta\n")
	f.src = filepath.Join(f.root, "src", "demo")
	gemkittest.WriteFile(t, filepath.Join(f.src, "gemini-extension.json"), demoManifest)
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "count.sh"), `printf '{"word":"%s","times":%s,"files":"%s"}\n' "$2" "$4" "$(ls | tr '\n' ' ')"`+"\n")
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "slow.sh"), "sleep "+slowSeconds+"\n")
	gemkittest.WriteFile(t, filepath.Join(f.src, "docs", "guide.md"), guideText)
	os.Chmod(filepath.Join(f.src, "tools", "count.sh"), 0o755)
	os.Chmod(filepath.Join(f.src, "tools", "slow.sh"), 0o755)
	c := exec.Command(f.bin, "extensions", "link", "--consent", f.src)
	c.Env = f.env()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("link: %v\n%s", err, out)
	}
	m, err := fakemodel.Start(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	f.model = m
	return f
}

// env is the agent's environment: a private home, config and temp folder,
// the scripted model.
func (f *fixture) env() []string {
	env := gemkittest.AgentEnv(f.home, f.root)
	if !f.noKey {
		env = append(env, "GEMINI_API_KEY=test-key")
	}
	if f.model != nil {
		env = append(env, "GOOGLE_GEMINI_BASE_URL="+f.model.URL)
	}
	return env
}

// envMap is env as the client script takes it.
func (f *fixture) envMap() map[string]string {
	m := map[string]string{}
	for _, kv := range f.env() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// checkEndsThenCancel checks a scenario whose prompts all end their turn
// but the last, cancelled after 800 ms during a stalled model turn:
// answered within two seconds, and stdout carried nothing but JSON-RPC.
func (r result) checkEndsThenCancel(t *testing.T, n int) {
	t.Helper()
	if len(r.Prompts) != n+1 {
		t.Fatalf("prompts %+v, want %d", r.Prompts, n+1)
	}
	for i, p := range r.Prompts {
		want := "end_turn"
		if i == n {
			want = "cancelled"
		}
		if p.StopReason != want {
			t.Errorf("prompt %d: %+v, want %s", i, p, want)
		}
	}
	if c := r.Prompts[n].AfterCancelMs; c == nil || *c > 2000 {
		t.Errorf("cancel answered after %v ms", c)
	}
	if len(r.NotProtocol) != 0 || r.StdoutLines == 0 {
		t.Errorf("stdout carried %d lines, these not JSON-RPC: %q", r.StdoutLines, r.NotProtocol)
	}
}

// checkOneWrite checks that the client was asked to write one file, path,
// and that it holds content byte for byte.
func (r result) checkOneWrite(t *testing.T, path, content string) {
	t.Helper()
	writes := r.requestsOf("fs/write_text_file")
	if len(writes) != 1 || !strings.Contains(string(writes[0]), `"path":"`+path+`"`) {
		t.Errorf("fs/write_text_file requests %s", writes)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Errorf("%s: %q %v", path, got, err)
	}
}

// plan is interop/acp-client.mjs's scenario.
type plan struct {
	Command     string            `json:"command"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env,omitempty"`
	Cwd         string            `json:"cwd"`
	FS          planFS            `json:"fs"`
	Permissions []string          `json:"permissions,omitempty"`
	Elicitation *elicitPlan       `json:"elicitation,omitempty"`
	MCPServers  []any             `json:"mcpServers,omitempty"`
	Prompts     []planPrompt      `json:"prompts"`
	TimeoutMs   int               `json:"timeoutMs,omitempty"`
}

type planFS struct {
	Read    bool              `json:"read"`
	Write   bool              `json:"write"`
	Missing string            `json:"missing,omitempty"`
	Buffers map[string]string `json:"buffers,omitempty"`
}

type planPrompt struct {
	Blocks        []any `json:"blocks"`
	CancelAfterMs *int  `json:"cancelAfterMs,omitempty"`
}

func textPrompt(s string) planPrompt {
	return planPrompt{Blocks: []any{map[string]any{"type": "text", "text": s}}}
}

// result is what interop/acp-client.mjs prints.
type result struct {
	Init struct {
		ProtocolVersion   int             `json:"protocolVersion"`
		AgentCapabilities json.RawMessage `json:"agentCapabilities"`
		AuthMethods       []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"authMethods"`
	} `json:"init"`
	Session *struct {
		SessionID string `json:"sessionId"`
	} `json:"session"`
	SessionError *rpcError `json:"sessionError"`
	Error        *rpcError `json:"error"`
	Prompts      []struct {
		StopReason    string    `json:"stopReason"`
		Error         *rpcError `json:"error"`
		Ms            float64   `json:"ms"`
		AfterCancelMs *float64  `json:"afterCancelMs"`
	} `json:"prompts"`
	Requests []struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"requests"`
	Updates     []json.RawMessage `json:"updates"`
	StdoutLines int               `json:"stdoutLines"`
	NotProtocol []string          `json:"notProtocol"`
	Exit        struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"exit"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// drive runs interop/acp-client.mjs with p and returns its result.
func drive(t *testing.T, p plan) result {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@agentclientprotocol/sdk")
	data, _ := json.Marshal(p)
	pf := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(pf, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interop, "acp-client.mjs"), pf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("acp-client: %v\nstderr:\n%s", err, stderr.String())
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("acp-client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("agent stderr:\n%s", stderr.String())
	return r
}

// update is one session/update as the test reads it.
type update struct {
	SessionUpdate string `json:"sessionUpdate"`
	Content       struct {
		Text string `json:"text"`
	} `json:"content"`
	ToolCallID string `json:"toolCallId"`
	Title      string `json:"title"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	Locations  []struct {
		Path string `json:"path"`
	} `json:"locations"`
}

func (r result) updates(t *testing.T) []update {
	t.Helper()
	out := make([]update, len(r.Updates))
	for i, u := range r.Updates {
		if err := json.Unmarshal(u, &out[i]); err != nil {
			// A tool_call_update's content is a list.
			var alt struct {
				SessionUpdate string `json:"sessionUpdate"`
				ToolCallID    string `json:"toolCallId"`
				Status        string `json:"status"`
			}
			json.Unmarshal(u, &alt)
			out[i] = update{SessionUpdate: alt.SessionUpdate, ToolCallID: alt.ToolCallID, Status: alt.Status}
		}
	}
	return out
}

func (r result) requestsOf(method string) []json.RawMessage {
	var out []json.RawMessage
	for _, q := range r.Requests {
		if q.Method == method {
			out = append(out, q.Params)
		}
	}
	return out
}

// turnText is the text of model turn i's request (the function responses
// included).
func turnText(t *testing.T, m *fakemodel.Server, i int) string {
	t.Helper()
	turns := m.Turns()
	if i >= len(turns) {
		t.Fatalf("only %d model turns, want turn %d", len(turns), i)
	}
	g, err := turns[i].Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(g.FunctionResponses())
	return g.Text() + "\n" + string(b)
}

func ms(n int) *int { return &n }
