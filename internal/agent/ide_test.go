package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fakemodel"
)

// testEditor is the editor side of `gemkit ide serve --editor stdio`: this
// test speaks the editor protocol to a real companion process, as a
// plugin would, and answers each diff with what the test tells it.
type testEditor struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	env   map[string]string
	diffs chan map[string]any // diff/open params
	opens chan struct{}
	// answers are the companion's answers to the editor's requests.
	answers chan json.RawMessage
}

func startEditor(t *testing.T, f *fixture) *testEditor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := f.cmd(ctx, "ide", "serve", "--editor", "stdio", "--workspace", f.ws,
		"--ide-pid", fmt.Sprint(os.Getpid()), "--ide-name", "testeditor", "--ide-display-name", "Test Editor")
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = io.Discard
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	e := &testEditor{t: t, cmd: c, in: in, diffs: make(chan map[string]any, 8), answers: make(chan json.RawMessage, 8)}
	ready := make(chan map[string]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params map[string]any  `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch m.Method {
			case "":
				if len(m.Error) > 0 {
					e.answers <- m.Error
				} else {
					e.answers <- m.Result
				}
			case "server/ready":
				env := map[string]string{}
				for k, v := range m.Params["env"].(map[string]any) {
					env[k] = v.(string)
				}
				ready <- env
			case "diff/open":
				e.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
				e.diffs <- m.Params
			case "diff/close":
				e.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": nil}})
				e.diffs <- map[string]any{"closed": m.Params["filePath"]}
			default:
				if len(m.ID) > 0 {
					e.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
				}
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	select {
	case e.env = <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("no server/ready from the companion")
	}
	for k, v := range e.env {
		f.extra = append(f.extra, k+"="+v)
	}
	// The machine running the tests may be a container, where the real
	// CLI's rule would dial host.docker.internal; an SSH session keeps
	// 127.0.0.1.
	f.extra = append(f.extra, "SSH_CONNECTION=127.0.0.1 1 127.0.0.1 22")
	return e
}

func (e *testEditor) send(v any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	data, _ := json.Marshal(v)
	e.in.Write(append(data, '\n'))
}

func (e *testEditor) notify(method string, params any) {
	e.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// request sends what notify would as a request, which the companion
// answers once it has applied it, and waits for the answer.
func (e *testEditor) request(t *testing.T, method string, params any) {
	t.Helper()
	e.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	select {
	case a := <-e.answers:
		if string(a) != "{}" {
			t.Fatalf("%s answered %s", method, a)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer to %s", method)
	}
}

func (e *testEditor) nextDiff(t *testing.T) map[string]any {
	t.Helper()
	select {
	case d := <-e.diffs:
		return d
	case <-time.After(60 * time.Second):
		t.Fatal("no diff/open")
		return nil
	}
}

// TestIDEContextAndEdits: with a real companion (`gemkit ide serve
// --editor stdio`) and this test as its editor, the editor's context is
// in the request as Gemini CLI words it; one proposed edit is accepted
// with a change made in the editor, the next rejected, and the file on
// disk is exactly right after each; the model is told each outcome.
func TestIDEContextAndEdits(t *testing.T) {
	f := newFixture(t)
	ed := startEditor(t, f)
	target := filepath.Join(f.ws, "a.txt")
	// Sent as a request: the answer says the companion holds it, so the
	// CLI that connects next finds it.
	ed.request(t, "editor/focus", map[string]any{"path": target, "cursor": map[string]any{"line": 2, "character": 3}, "selectedText": "beta"})

	srv := startOpenAI(t,
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "search": "beta", "replace": "gamma"}),
		fakemodel.Call("propose_edit", map[string]any{"path": "a.txt", "content": "rejected\n"}),
		fakemodel.Text("Edited."))
	done := make(chan struct{})
	var tr transcript
	var code int
	var stderr string
	go func() {
		defer close(done)
		tr, code, stderr = f.run(t, "--base-url", srv.URL+"/v1", "--model", "m", "edit a.txt")
	}()

	var d map[string]any
	select {
	case d = <-ed.diffs:
	case <-done:
		t.Fatalf("gemkit run ended without a diff: exit %d %+v\n%s", code, tr, stderr)
	case <-time.After(60 * time.Second):
		t.Fatal("no diff/open")
	}
	if d["filePath"] != target || d["newContent"] != "alpha\ngamma\n" {
		t.Fatalf("first diff %v", d)
	}
	ed.notify("diff/accepted", map[string]any{"filePath": target, "content": "alpha\ngamma, edited in the editor\n"})
	d = ed.nextDiff(t)
	if d["newContent"] != "rejected\n" {
		t.Fatalf("second diff %v", d)
	}
	got, _ := os.ReadFile(target)
	if string(got) != "alpha\ngamma, edited in the editor\n" {
		t.Fatalf("after the accepted diff the file is %q", got)
	}
	ed.notify("diff/rejected", map[string]any{"filePath": target})
	<-done
	if code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d %+v\n%s", code, tr, stderr)
	}
	got, _ = os.ReadFile(target)
	if string(got) != "alpha\ngamma, edited in the editor\n" {
		t.Fatalf("after the rejected diff the file is %q", got)
	}
	reqs := srv.Requests()
	c0, _ := reqs[0].Chat()
	want := "Here is the user's editor context as a JSON object. This is for your information only.\n```json\n{\n  \"activeFile\": {\n    \"path\": \"" +
		target + "\",\n    \"cursor\": {\n      \"line\": 2,\n      \"character\": 3\n    },\n    \"selectedText\": \"beta\"\n  }\n}\n```"
	if !strings.Contains(c0.Text(), want) {
		t.Errorf("the IDE context is not in the request as Gemini CLI words it; want\n%s\ngot\n%s", want, c0.Text())
	}
	c2, _ := reqs[2].Chat()
	res := c2.ToolResults()
	if len(res) != 2 || !strings.Contains(res[0], "accepted") || !strings.Contains(res[0], "+gamma, edited in the editor") ||
		!strings.Contains(res[1], "rejected") {
		t.Errorf("outcomes told to the model: %q", res)
	}
}
