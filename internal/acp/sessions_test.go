package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// sessionsPlan is interop/acp-sessions.mjs's plan.
type sessionsPlan struct {
	Command            string            `json:"command"`
	Args               []string          `json:"args"`
	Env                map[string]string `json:"env"`
	Cwd                string            `json:"cwd"`
	ClientCapabilities map[string]any    `json:"clientCapabilities,omitempty"`
	Runs               [][]step          `json:"runs"`
}

type step struct {
	Op        string `json:"op"`
	Text      string `json:"text,omitempty"`
	SessionID string `json:"sessionId,omitempty"`
	ConfigID  string `json:"configId,omitempty"`
	Value     string `json:"value,omitempty"`
	ModeID    string `json:"modeId,omitempty"`
	All       bool   `json:"all,omitempty"`
}

// sessionsResult is what interop/acp-sessions.mjs prints.
type sessionsResult struct {
	Runs []struct {
		Init struct {
			AgentCapabilities json.RawMessage `json:"agentCapabilities"`
			AuthMethods       []struct {
				ID   string   `json:"id"`
				Type string   `json:"type"`
				Args []string `json:"args"`
			} `json:"authMethods"`
		} `json:"init"`
		Steps  []stepResult `json:"steps"`
		Stderr string       `json:"stderr"`
		Error  *rpcError    `json:"error"`
	} `json:"runs"`
	Checked     int `json:"checked"`
	Invalid     []struct{ Problem, Line string }
	NotProtocol []string  `json:"notProtocol"`
	Error       *rpcError `json:"error"`
}

// stepResult is what a step of a run answered.
type stepResult struct {
	Op      string            `json:"op"`
	Result  json.RawMessage   `json:"result"`
	Error   *rpcError         `json:"error"`
	Ms      float64           `json:"ms"`
	Updates []json.RawMessage `json:"updates"`
	Asked   []string          `json:"asked"`
}

// driveSessions runs interop/acp-sessions.mjs with p: the real ACP
// TypeScript SDK as the client, every message gemkit writes checked
// against the SDK's ACP v1 schema. Any message the schema refuses fails
// the test.
func driveSessions(t *testing.T, p sessionsPlan) sessionsResult {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@agentclientprotocol/sdk", "ajv")
	data, _ := json.Marshal(p)
	pf := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(pf, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(interop, "acp-sessions.mjs"), pf)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("acp-sessions: %v\nstderr:\n%s", err, stderr.String())
	}
	var r sessionsResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("acp-sessions output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for i, run := range r.Runs {
		t.Logf("run %d, agent stderr:\n%s", i+1, run.Stderr)
		if run.Error != nil {
			t.Fatalf("run %d: %+v", i+1, run.Error)
		}
	}
	if r.Error != nil {
		t.Fatalf("%+v", r.Error)
	}
	if r.Checked == 0 || len(r.Invalid) != 0 || len(r.NotProtocol) != 0 {
		t.Errorf("%d messages checked against the ACP v1 schema; refused: %+v; not JSON-RPC: %q", r.Checked, r.Invalid, r.NotProtocol)
	}
	return r
}

func (f *fixture) sessionsPlan(runs ...[]step) sessionsPlan {
	return sessionsPlan{Command: f.bin, Args: []string{"acp"}, Env: f.envMap(), Cwd: f.ws, Runs: runs}
}

// kinds is the sessionUpdate of each update.
func kinds(us []json.RawMessage) []string {
	out := make([]string, len(us))
	for i, u := range us {
		var k struct {
			SessionUpdate string `json:"sessionUpdate"`
		}
		json.Unmarshal(u, &k)
		out[i] = k.SessionUpdate
	}
	return out
}

// TestSessionsAcrossRestarts drives gemkit acp with the ACP TypeScript
// SDK's client through three runs of the agent, each a new process: a
// session created and prompted (a tool call among its turns); the agent
// restarted, the session listed (a damaged file and one of an older
// format beside it told in words, kept, and no hindrance), loaded with
// its history replayed, its model changed through config options (the
// next turn goes to that model); restarted again, resumed without a
// replay, its mode changed, closed, deleted, and gone from the list.
func TestSessionsAcrossRestarts(t *testing.T) {
	f := newFixture(t,
		fakemodel.Call("read_file", map[string]any{"path": "a.txt"}), fakemodel.Text("It says alpha."),
		fakemodel.Text("You are welcome."),
		fakemodel.Text("Goodbye."))
	dir := gemkitdir.ACPSessions(f.home)
	damaged := map[string]string{
		"gemkit-damaged.jsonl": "{\"version\":1,\"id\":\"gemkit-damaged\",\"cwd\":\"" + f.ws + "\",\"messages\":2}\n{\"role\":\"user\",\"text\":\"hi\"}\n",
		"gemkit-old.jsonl":     "{\"id\":\"gemkit-old\",\"cwd\":\"" + f.ws + "\"}\n",
		"gemkit-garbage.jsonl": "\x00\x01 not json\n",
	}
	for name, content := range damaged {
		gemkittest.WriteFile(t, filepath.Join(dir, name), content)
	}
	r := driveSessions(t, f.sessionsPlan(
		[]step{{Op: "new"}, {Op: "prompt", Text: "Read a.txt please"}},
		[]step{{Op: "list"}, {Op: "load", SessionID: "gemkit-damaged"}, {Op: "load", SessionID: "gemkit-old"},
			{Op: "load"}, {Op: "set_config_option", ConfigID: "model", Value: "gemini-2.5-pro"}, {Op: "prompt", Text: "Thanks"}},
		[]step{{Op: "resume"}, {Op: "set_config_option", ConfigID: "mode", Value: "autoEdit"}, {Op: "prompt", Text: "Bye"},
			{Op: "close"}, {Op: "delete"}, {Op: "list"}, {Op: "load"}},
	))
	for _, run := range r.Runs {
		for _, s := range run.Steps {
			t.Logf("%s: %.0f ms", s.Op, s.Ms)
		}
	}
	if len(r.Runs) != 3 {
		t.Fatalf("%d runs", len(r.Runs))
	}
	var caps struct {
		LoadSession         bool                       `json:"loadSession"`
		SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
	}
	json.Unmarshal(r.Runs[0].Init.AgentCapabilities, &caps)
	if !caps.LoadSession || len(caps.SessionCapabilities) != 4 {
		t.Errorf("capabilities %s", r.Runs[0].Init.AgentCapabilities)
	}
	run1, run2, run3 := r.Runs[0].Steps, r.Runs[1].Steps, r.Runs[2].Steps
	for i, steps := range [][]string{{"new", "prompt"}, {"list", "load", "load", "load", "set_config_option", "prompt"},
		{"resume", "set_config_option", "prompt", "close", "delete", "list", "load"}} {
		if len(r.Runs[i].Steps) != len(steps) {
			t.Fatalf("run %d: %d steps, want %d", i+1, len(r.Runs[i].Steps), len(steps))
		}
	}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(run1[0].Result, &created)
	if run1[1].Error != nil {
		t.Fatalf("prompt: %+v", run1[1].Error)
	}

	sessionsListed(t, f, run2, r.Runs[1].Stderr, created.SessionID, dir, damaged)
	sessionLoaded(t, f, run2)
	sessionResumedAndDeleted(t, run3, created.SessionID, dir)
}

// sessionList is what session/list answers.
type sessionList struct {
	Sessions []struct {
		SessionID, Cwd, Title string
	}
}

// sessionsListed: listed after the restart (run2 begins with the list),
// most recent first. A file whose first line reads well is listed
// (loading it tells what is wrong); those whose first line does not are
// left out, and told in the log (stderr); the damaged files are kept.
func sessionsListed(t *testing.T, f *fixture, run2 []stepResult, stderr, created, dir string, damaged map[string]string) {
	var list sessionList
	json.Unmarshal(run2[0].Result, &list)
	if len(list.Sessions) != 2 || list.Sessions[0].SessionID != created || list.Sessions[0].Cwd != f.ws ||
		list.Sessions[0].Title != "Read a.txt please" || list.Sessions[1].SessionID != "gemkit-damaged" {
		t.Errorf("session/list %s", run2[0].Result)
	}
	for i, want := range []string{"it is cut short: it holds 1 of the 2 messages", "written by an older gemkit"} {
		e := run2[1+i].Error
		if e == nil || !strings.Contains(e.Message, want) || !strings.Contains(e.Message, "is kept as it is") {
			t.Errorf("loading a damaged session: %+v, want %q", e, want)
		}
	}
	if !strings.Contains(stderr, "gemkit-garbage cannot be read") || !strings.Contains(stderr, "gemkit-old cannot be read") {
		t.Errorf("the unreadable file is not told in the log")
	}
	for name, content := range damaged {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != content {
			t.Errorf("%s changed: %q %v", name, got, err)
		}
	}
}

// sessionLoaded: loaded (run2's fourth step), the conversation is
// replayed before the answer, and the model chosen through config
// options answers the next prompt with the whole conversation.
func sessionLoaded(t *testing.T, f *fixture, run2 []stepResult) {
	load := run2[3]
	if load.Error != nil {
		t.Fatalf("session/load: %+v", load.Error)
	}
	got := strings.Join(kinds(load.Updates), " ")
	if want := "user_message_chunk tool_call tool_call_update agent_message_chunk"; got != want {
		t.Errorf("replayed %s, want %s\n%s", got, want, load.Updates)
	}
	if b, _ := json.Marshal(load.Updates); !strings.Contains(string(b), "Read a.txt please") || !strings.Contains(string(b), "It says alpha.") || !strings.Contains(string(b), `"status":"completed"`) {
		t.Errorf("replay %s", b)
	}

	// The model chosen through config options answers the next prompt.
	if !strings.Contains(string(run2[4].Result), `"currentValue":"gemini-2.5-pro"`) || !strings.Contains(string(run2[4].Result), `"Gemini 2.5 Pro"`) {
		t.Errorf("set_config_option model: %s %+v", run2[4].Result, run2[4].Error)
	}
	turns := f.model.Turns()
	if len(turns) != 4 || turns[1].Model != "gemini-2.5-flash" || turns[2].Model != "gemini-2.5-pro" || turns[3].Model != "gemini-2.5-pro" {
		for _, tr := range turns {
			t.Logf("turn: %s", tr.Path)
		}
		t.Fatalf("%d turns, want 4, the last two to gemini-2.5-pro", len(turns))
	}
	// The whole conversation reached the model after each restart.
	if g, _ := turns[3].Generate(); !strings.Contains(g.Text(), "Read a.txt please") || !strings.Contains(g.Text(), "Thanks") {
		t.Errorf("the last turn lacks the earlier ones: %s", g.Text())
	}
}

// sessionResumedAndDeleted: resumed without a replay, the mode told as
// current_mode_update; deleted, gone from the list and the folder, and
// loading it says so.
func sessionResumedAndDeleted(t *testing.T, run3 []stepResult, created, dir string) {
	if run3[0].Error != nil || len(run3[0].Updates) != 0 || !strings.Contains(string(run3[0].Result), `"currentValue":"gemini-2.5-pro"`) {
		t.Errorf("session/resume: %s %+v, updates %s", run3[0].Result, run3[0].Error, run3[0].Updates)
	}
	if k := kinds(run3[1].Updates); len(k) != 1 || k[0] != "current_mode_update" {
		t.Errorf("set_config_option mode: updates %v", k)
	}
	var list sessionList
	json.Unmarshal(run3[5].Result, &list)
	if run3[3].Error != nil || run3[4].Error != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionID != "gemkit-damaged" {
		t.Errorf("close %+v, delete %+v, then list %s", run3[3].Error, run3[4].Error, run3[5].Result)
	}
	if e := run3[6].Error; e == nil || e.Code != -32002 || !strings.Contains(e.Message, "no stored session") {
		t.Errorf("loading a deleted session: %+v", e)
	}
	if _, err := os.Stat(filepath.Join(dir, created+".jsonl")); !os.IsNotExist(err) {
		t.Errorf("the deleted session's file: %v", err)
	}
}

// TestSessionFilesPrivate checks the store's modes: the folder 0700, each
// session's file 0600.
func TestSessionFilesPrivate(t *testing.T) {
	f := newFixture(t, fakemodel.Text("Hi."))
	r := driveSessions(t, f.sessionsPlan([]step{{Op: "new"}, {Op: "prompt", Text: "Hello"}}))
	var created struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(r.Runs[0].Steps[0].Result, &created)
	dir := gemkitdir.ACPSessions(f.home)
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, created.SessionID+".jsonl"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want %04o", path, fi.Mode(), err, want)
		}
	}
}

// TestAutoEditMode: in the approval mode autoEdit, chosen through
// set_mode as a client that uses modes does, an edit is written without
// a question; an edit of a protected file (.env) is still asked about;
// back in default, every edit is asked about again.
func TestAutoEditMode(t *testing.T) {
	edit := func(path, content string) fakemodel.Reply {
		return fakemodel.Call("propose_edit", map[string]any{"path": path, "content": content})
	}
	f := newFixture(t, edit("new.txt", "auto\n"), fakemodel.Text("done"), edit(".env", "KEY=1\n"), fakemodel.Text("done"),
		edit("again.txt", "asked\n"), fakemodel.Text("done"))
	r := driveSessions(t, f.sessionsPlan([]step{{Op: "new"}, {Op: "set_mode", ModeID: "autoEdit"},
		{Op: "prompt", Text: "write new.txt"}, {Op: "prompt", Text: "write .env"},
		{Op: "set_mode", ModeID: "default"}, {Op: "prompt", Text: "write again.txt"}}))
	steps := r.Runs[0].Steps
	for i, s := range steps {
		if s.Error != nil {
			t.Fatalf("step %d %s: %+v", i, s.Op, s.Error)
		}
	}
	if len(steps[2].Asked) != 0 || len(steps[3].Asked) != 1 || !strings.Contains(steps[3].Asked[0], "protected") || len(steps[5].Asked) != 1 {
		t.Errorf("asked: autoEdit %q, protected %q, default %q", steps[2].Asked, steps[3].Asked, steps[5].Asked)
	}
	for name, want := range map[string]string{"new.txt": "auto\n", ".env": "KEY=1\n", "again.txt": "asked\n"} {
		if got, err := os.ReadFile(filepath.Join(f.ws, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
	if k := kinds(steps[1].Updates); len(k) != 1 || k[0] != "config_option_update" {
		t.Errorf("set_mode told %v", k)
	}
}

// TestSlowModelList: a provider that does not answer its model list
// holds no session up past the list's wait (2 s): session/new answers
// with the configured model alone.
func TestSlowModelList(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stall := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(stall); srv.Close() })
	p := f.sessionsPlan([]step{{Op: "new"}})
	p.Env["GOOGLE_GEMINI_BASE_URL"] = "http://" + ln.Addr().String()
	r := driveSessions(t, p)
	s := r.Runs[0].Steps[0]
	if s.Error != nil || s.Ms > 5000 {
		t.Fatalf("session/new: %+v after %.0f ms", s.Error, s.Ms)
	}
	var resp struct {
		ConfigOptions []struct {
			ID           string            `json:"id"`
			CurrentValue string            `json:"currentValue"`
			Options      []json.RawMessage `json:"options"`
		} `json:"configOptions"`
	}
	json.Unmarshal(s.Result, &resp)
	if len(resp.ConfigOptions) != 2 || resp.ConfigOptions[0].CurrentValue != "gemini-2.5-flash" || len(resp.ConfigOptions[0].Options) != 1 {
		t.Errorf("config options %s", s.Result)
	}
}
