package acp_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// rawAgent is `gemkit acp` spoken to line by line, for input no client
// library would send.
type rawAgent struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	done  chan error
}

func startRaw(t *testing.T, f *fixture, args ...string) *rawAgent {
	t.Helper()
	cmd := exec.Command(f.bin, append([]string{"acp"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stderr = f.ws, f.env(), os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &rawAgent{t: t, cmd: cmd, in: in, lines: make(chan string, 100), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
		a.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	return a
}

func (a *rawAgent) send(msg string) {
	a.t.Helper()
	if _, err := io.WriteString(a.in, msg+"\n"); err != nil {
		a.t.Fatal(err)
	}
}

// msg is one JSON-RPC message from the agent.
type msg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// next returns the next message; every line must be JSON-RPC.
func (a *rawAgent) next() msg {
	a.t.Helper()
	select {
	case line, ok := <-a.lines:
		if !ok {
			a.t.Fatal("the agent closed its stdout")
		}
		var m msg
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" {
			a.t.Fatalf("not JSON-RPC on stdout: %q", line)
		}
		return m
	case <-time.After(20 * time.Second):
		a.t.Fatal("no message from the agent")
	}
	return msg{}
}

// answer returns the response to request id, skipping notifications and
// collecting the agent's requests.
func (a *rawAgent) answer(id int, asked *[]msg) msg {
	a.t.Helper()
	for {
		m := a.next()
		if m.Method != "" {
			if m.ID != nil && asked != nil {
				*asked = append(*asked, m)
			}
			continue
		}
		if string(m.ID) == strconv.Itoa(id) {
			return m
		}
	}
}

// open initializes (id 1) and opens a session in f's workspace (id 2).
func (a *rawAgent) open(f *fixture) string {
	a.t.Helper()
	cwd, _ := json.Marshal(f.ws)
	a.send(initLine)
	a.answer(1, nil)
	a.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}}`)
	var sess struct{ SessionID string }
	if json.Unmarshal(a.answer(2, nil).Result, &sess); sess.SessionID == "" {
		a.t.Fatal("session/new gave no session")
	}
	return sess.SessionID
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`

// TestBadInput: what no well-behaved client sends gets a JSON-RPC error
// naming the problem, and the connection goes on.
func TestBadInput(t *testing.T) {
	f := newFixture(t, fakemodel.Text("Fine."))
	a := startRaw(t, f)
	cwd, _ := json.Marshal(f.ws)

	// A prompt before any session: unknown session.
	a.send(initLine)
	if m := a.answer(1, nil); m.Error != nil {
		t.Fatalf("initialize: %+v", m.Error)
	}
	a.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`)
	if m := a.answer(2, nil); m.Error == nil || m.Error.Code != -32602 || !strings.Contains(string(m.Error.Data), "session/new") || !strings.Contains(m.Error.Message, "session/new") {
		t.Errorf("prompt before session/new: %+v", m)
	}
	// An unknown method, a non-JSON line (skipped, as Gemini CLI does), a
	// newer protocol version (answered with ours), a malformed version.
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/fly","params":{}}`)
	if m := a.answer(3, nil); m.Error == nil || m.Error.Code != -32601 || m.Error.Message != "Method not found: session/fly" {
		t.Errorf("unknown method: %+v", m)
	}
	a.send(`this is not json`)
	a.send(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":99,"clientCapabilities":{}}}`)
	if m := a.answer(4, nil); m.Error != nil || !strings.Contains(string(m.Result), `"protocolVersion":1`) {
		t.Errorf("initialize 99: %+v %s", m.Error, m.Result)
	}
	a.send(`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"one"}}`)
	if m := a.answer(5, nil); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("initialize with a string version: %+v", m)
	}
	// A relative cwd, and an image the agent did not offer to take.
	a.send(`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":"rel/dir","mcpServers":[]}}`)
	if m := a.answer(6, nil); m.Error == nil || m.Error.Code != -32602 || !strings.Contains(string(m.Error.Data), "absolute") {
		t.Errorf("relative cwd: %+v", m)
	}
	a.send(`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}}`)
	m := a.answer(7, nil)
	var sess struct{ SessionID string }
	if json.Unmarshal(m.Result, &sess); sess.SessionID == "" {
		t.Fatalf("session/new: %+v", m)
	}
	a.send(`{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"` + sess.SessionID + `","prompt":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}`)
	if m := a.answer(8, nil); m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("image prompt: %+v", m)
	}
	// The session still works.
	a.send(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":"` + sess.SessionID + `","prompt":[{"type":"text","text":"hi"}]}}`)
	if m := a.answer(9, nil); m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Errorf("prompt: %+v %s", m.Error, m.Result)
	}
}

// TestUnansweredPermission: a client that never answers a permission
// request holds the edit only for --permission-timeout; then nothing is
// written and the model is told.
func TestUnansweredPermission(t *testing.T) {
	f := newFixture(t, fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "changed\n"}), fakemodel.Text("OK."))
	a := startRaw(t, f, "--permission-timeout", "1s")
	id := a.open(f)
	start := time.Now()
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"edit"}]}}`)
	var asked []msg
	m := a.answer(3, &asked)
	if m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Errorf("prompt: %+v %s", m.Error, m.Result)
	}
	if len(asked) != 1 || asked[0].Method != "session/request_permission" {
		t.Errorf("requests %+v", asked)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the prompt took %v", d)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "alpha\nbeta\n" {
		t.Errorf("a.txt: %q", got)
	}
	if got := turnText(t, f.model, 1); !strings.Contains(got, "did not answer the permission request within 1s") || !strings.Contains(got, "nothing was written") {
		t.Errorf("the model was told: %s", got)
	}
}

// TestNoCredentials: without a model key, session/new answers
// "authentication required" (-32000) saying what to set, in the message
// that clients print (acpx shows error.message only), after initialize
// listed where gemkit looks.
func TestNoCredentials(t *testing.T) {
	f := newFixture(t)
	f.noKey = true
	a := startRaw(t, f)
	a.send(initLine)
	if m := a.answer(1, nil); !strings.Contains(string(m.Result), `"id":"gemini-api-key"`) || !strings.Contains(string(m.Result), `"type":"env_var"`) || !strings.Contains(string(m.Result), `"name":"GEMINI_API_KEY"`) {
		t.Errorf("authMethods: %s", m.Result)
	}
	cwd, _ := json.Marshal(f.ws)
	a.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + string(cwd) + `,"mcpServers":[]}}`)
	if m := a.answer(2, nil); m.Error == nil || m.Error.Code != -32000 || !strings.Contains(string(m.Error.Data), "GEMINI_API_KEY") ||
		!strings.HasPrefix(m.Error.Message, "Authentication required: ") || !strings.Contains(m.Error.Message, "set GEMINI_API_KEY") {
		t.Errorf("session/new without a key: %+v", m.Error)
	}
}

// TestMethodNotFoundNamed: every "Method not found" names the method in
// its message, which is all acpx and Zed show (error.data is never
// printed), whoever answers it: the SDK for a method it does not know,
// an extension method or a method of a newer protocol gemkit does not
// implement. The code stays -32601 and data.method stays.
func TestMethodNotFoundNamed(t *testing.T) {
	f := newFixture(t)
	a := startRaw(t, f)
	id := a.open(f)
	for i, method := range []string{
		"session/fly",       // no such method
		"_gemkit/nothing",   // an extension method
		"session/set_model", // unstable, not implemented
		"providers/list",    // the same
	} {
		n := 10 + i
		a.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"` + method + `","params":{"sessionId":"` + id + `","modelId":"m","configId":"c","value":"v"}}`)
		m := a.answer(n, nil)
		if m.Error == nil || m.Error.Code != -32601 || m.Error.Message != "Method not found: "+method || !strings.Contains(string(m.Error.Data), `"method":"`+method+`"`) {
			t.Errorf("%s: %+v", method, m.Error)
		}
	}
}

// TestCancelledPermissionOrder: a session/cancel while an edit's
// permission request waits for the person gives the client, in this
// order, the $/cancel_request of that request and then the prompt's
// answer, cancelled: a client that has the turn over must not be told
// afterwards to cancel a request of it. The client's own "cancelled"
// answer to the request, which the protocol asks of it, is taken
// quietly, and nothing is written.
func TestCancelledPermissionOrder(t *testing.T) {
	f := newFixture(t, fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "changed\n"}), fakemodel.Text("OK."))
	a := startRaw(t, f)
	id := a.open(f)
	a.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"edit"}]}}`)
	var perm msg
	for perm.Method != "session/request_permission" {
		perm = a.next()
	}
	a.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + id + `"}}`)
	var seen []string
	for {
		m := a.next()
		if m.Method == "$/cancel_request" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			seen = append(seen, "cancel "+string(p.RequestID))
			continue
		}
		if m.Method == "" && string(m.ID) == "3" {
			seen = append(seen, "prompt "+string(m.Result))
			break
		}
	}
	want := []string{"cancel " + string(perm.ID), `prompt {"stopReason":"cancelled"}`}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("after session/cancel the client got\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	a.send(`{"jsonrpc":"2.0","id":` + string(perm.ID) + `,"result":{"outcome":{"outcome":"cancelled"}}}`)
	a.send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"again"}]}}`)
	if m := a.answer(4, nil); m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
		t.Errorf("the next prompt: %+v %s", m.Error, m.Result)
	}
	if got, _ := os.ReadFile(filepath.Join(f.ws, "a.txt")); string(got) != "alpha\nbeta\n" {
		t.Errorf("a.txt: %q", got)
	}
}

// TestPermissionOptionsDocumented: docs/acp.md names each option of
// gemkit's permission requests by the ID a client answers with and its
// kind, as they go on the wire: an edit's, and an extension tool's asked
// because the tool changed since the person agreed.
func TestPermissionOptionsDocumented(t *testing.T) {
	f := newFixture(t,
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "changed\n"}), fakemodel.Text("Rejected."),
		fakemodel.Call("demo_count", map[string]any{"word": "hi", "times": 2}), fakemodel.Text("Rejected too."))
	gemkittest.WriteFile(t, filepath.Join(f.src, "tools", "count.sh"), "echo changed\n")
	raw, err := os.ReadFile(filepath.Join(gemkittest.RepoRoot(t), "docs", "acp.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(raw)), " ") // as wrapped
	a := startRaw(t, f)
	id := a.open(f)
	for i, what := range []string{"an edit", "an extension tool"} {
		n := 3 + i
		a.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"go"}]}}`)
		var perm msg
		for perm.Method != "session/request_permission" {
			perm = a.next()
		}
		var p struct {
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		if err := json.Unmarshal(perm.Params, &p); err != nil || len(p.Options) == 0 {
			t.Fatalf("%s: options %s (%v)", what, perm.Params, err)
		}
		for _, o := range p.Options {
			if words := "ID `" + o.OptionID + "`, kind `" + o.Kind + "`"; !strings.Contains(doc, words) {
				t.Errorf("%s: docs/acp.md does not name its option as %q", what, words)
			}
		}
		a.send(`{"jsonrpc":"2.0","id":` + string(perm.ID) + `,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`)
		if m := a.answer(n, nil); m.Error != nil || !strings.Contains(string(m.Result), "end_turn") {
			t.Errorf("%s: prompt %+v %s", what, m.Error, m.Result)
		}
	}
}
