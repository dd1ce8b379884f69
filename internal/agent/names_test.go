package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// helloManifest is the extension plan's own example (section 8,
// hello-extension), whose tool the plan's model calls as
// sayHello(name="Ada").
const helloManifest = `{
  "name": "hello-extension",
  "version": "1.0.0",
  "description": "A simple extension that says hello.",
  "permissions": {"filesystem": {"read": "none", "write": "none"}, "network": {"allowedHosts": []}},
  "tools": [{"name": "sayHello", "description": "Says hello to the given name.", "executable": "tools/say-hello.py", "runtime": "python",
    "args": [{"name": "name", "type": "string", "description": "The name to say hello to."}]}]
}`

const helloPy = `import argparse

if __name__ == "__main__":
  parser = argparse.ArgumentParser()
  parser.add_argument("--name", required=True, help="The name to say hello to.")
  args = parser.parse_args()
  print(f"Hello, {args.name}!")
`

// withNames links the plan's hello-extension and a second extension
// whose tool count has the same declared name as demo's.
func withNames(t *testing.T) *fixture {
	t.Helper()
	gemkittest.Tool(t, "python3", "python3")
	f := newFixture(t)
	for name, files := range map[string]map[string]string{
		"hello-extension": {"gemini-extension.json": helloManifest, "tools/say-hello.py": helloPy},
		"other": {"gemini-extension.json": `{"name": "other", "version": "1.0.0", "tools": [{"name": "count", "description": "Counts too.", "executable": "tools/count.sh", "runtime": "shell"}]}`,
			"tools/count.sh": "echo other\n"},
	} {
		src := filepath.Join(f.root, "src", name)
		for rel, body := range files {
			gemkittest.WriteFile(t, filepath.Join(src, rel), body)
			if strings.HasPrefix(rel, "tools/") {
				os.Chmod(filepath.Join(src, rel), 0o755)
			}
		}
		if out, err := f.cmd(context.Background(), "extensions", "link", "--consent", src).CombinedOutput(); err != nil {
			t.Fatalf("link %s: %v\n%s", name, err, out)
		}
	}
	return f
}

// TestPlanCallForm: in the text protocol, the plan's own call form
// <tool_code>sayHello(name="Ada")</tool_code> runs hello-extension's tool,
// a name unique among the enabled tools, with the same arguments, as does
// the name qualified with the extension's; count, which two extensions
// declare, is answered with both; <read_doc>guide</read_doc> finds demo's
// doc.
func TestPlanCallForm(t *testing.T) {
	f := withNames(t)
	srv := startOpenAI(t,
		fakemodel.Text(`<tool_code>sayHello(name="Ada")</tool_code>
<tool_code>hello-extension.sayHello(name="Bo")</tool_code>
<tool_code>{"name": "hello_extension_sayHello", "args": {"name": "Cy"}}</tool_code>
<tool_code>count(word="x", times=1)</tool_code>
<read_doc>guide</read_doc>`),
		fakemodel.Text("Greeted."))
	srv.RefuseTools()
	tr, code, stderr := f.run(t, "--no-ide", "--base-url", srv.URL+"/v1", "-m", "m", "greet Ada")
	if code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d %+v\nstderr:\n%s", code, tr, stderr)
	}
	reqs := srv.Requests()
	last, _ := reqs[len(reqs)-1].Chat()
	got := last.Text()
	for _, want := range []string{
		"<tool_result name=\"sayHello\" status=\"ok\">\nHello, Ada!\n",
		"<tool_result name=\"hello-extension.sayHello\" status=\"ok\">\nHello, Bo!\n",
		"<tool_result name=\"hello_extension_sayHello\" status=\"ok\">\nHello, Cy!\n",
		`<tool_result name="count" status="error">` + "\n" + `"count" could be any of these tools: demo_count, other_count; call the one you mean by its name`,
		"The count tool repeats a word.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the results lack %q:\n%s", want, got)
		}
	}
	// The transcript names the tool that ran.
	var ran []string
	for _, e := range tr.Events {
		if e.Type == "tool_call" {
			ran = append(ran, e.Name)
		}
	}
	if strings.Join(ran, " ") != "hello-extension_sayHello hello-extension_sayHello hello-extension_sayHello count read_doc" {
		t.Errorf("tool calls %q", ran)
	}
}

// TestNativeShortNames: the same through function calling: the model
// calls sayHello and count unqualified, and read_doc without the
// extension.
func TestNativeShortNames(t *testing.T) {
	f := withNames(t)
	srv := startGemini(t,
		fakemodel.Reply{Calls: []fakemodel.FunctionCall{
			{Name: "sayHello", Args: map[string]any{"name": "Ada"}},
			{Name: "count", Args: map[string]any{"word": "x", "times": 1}},
			{Name: "read_doc", Args: map[string]any{"name": "guide"}},
		}},
		fakemodel.Text("Greeted."))
	f.gemini(srv)
	tr, code, stderr := f.run(t, "--no-ide", "greet Ada")
	if code != 0 || tr.Status != "done" {
		t.Fatalf("exit %d %+v\nstderr:\n%s", code, tr, stderr)
	}
	resp := geminiTurn(t, srv, 1).FunctionResponses()
	if len(resp) != 3 {
		t.Fatalf("%d function responses", len(resp))
	}
	if out, _ := resp[0].Response["output"].(string); resp[0].Name != "sayHello" || out != "Hello, Ada!\n" {
		t.Errorf("sayHello: %s %v", resp[0].Name, resp[0].Response)
	}
	if e, _ := resp[1].Response["error"].(string); !strings.Contains(e, "demo_count, other_count") {
		t.Errorf("count: %v", resp[1].Response)
	}
	if out, _ := resp[2].Response["output"].(string); !strings.Contains(out, "The count tool repeats a word.") {
		t.Errorf("read_doc: %v", resp[2].Response)
	}
}
