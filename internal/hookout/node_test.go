package hookout

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// geminiRun is how Gemini CLI 0.61's own HookRunner and HookAggregator
// took a hook's run (testdata/hookrunner.mjs): Effects is what its
// callers act on, nil for no output, "throws" when its aggregation
// throws.
type geminiRun struct {
	Success  bool   `json:"success"`
	ExitCode *int   `json:"exitCode"`
	Format   string `json:"format"`
	Effects  any    `json:"effects"`
}

// geminiHooks is testdata/hookrunner.mjs, running.
type geminiHooks struct {
	in  io.Writer
	out *bufio.Reader
}

func startGeminiHooks(t *testing.T) *geminiHooks {
	t.Helper()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	script, err := filepath.Abs(filepath.Join("testdata", "hookrunner.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, interop)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return &geminiHooks{in: in, out: bufio.NewReader(out)}
}

// run has Gemini CLI run a hook of event that writes stdout and stderr
// and exits with code.
func (g *geminiHooks) run(t *testing.T, event string, stdout, stderr []byte, code int) geminiRun {
	t.Helper()
	dir := t.TempDir()
	for name, b := range map[string][]byte{"out": stdout, "err": stderr, "code": []byte(strconv.Itoa(code))} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Fprintf(g.in, "%s %s\n", event, dir)
	line, err := g.out.ReadString('\n')
	if err != nil {
		t.Fatalf("Gemini CLI's hook runner: %v", err)
	}
	var r geminiRun
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	return r
}

// rewriting are the effects through which a hook's answer changes what
// runs, or what the model said: none may come of gemkit's answer.
var rewriting = []string{"toolInput", "tail", "synthetic", "response"}

// TestFilterAgainstGeminiCLI runs each case's hook, then gemkit's answer
// for it, through Gemini CLI 0.61's own hook runner and aggregator: of
// gemkit's answer, Gemini CLI acts on no rewrite (of the call, the
// request, the model's answer, the tools), a block, a stop or an ask of
// the hook's is one still, its context is bounded, and where gemkit
// dropped nothing Gemini CLI does with gemkit's answer exactly what it
// does with the hook's.
func TestFilterAgainstGeminiCLI(t *testing.T) {
	g := startGeminiHooks(t)
	for _, c := range hookCases {
		t.Run(c.name, func(t *testing.T) { g.check(t, c) })
	}
}

// TestGeneratedAgainstGeminiCLI checks, as TestFilterAgainstGeminiCLI
// does, a few hundred answers made of the fields Gemini CLI reads, in
// its letters and others, with values of every type, given twice, as
// text or JSON in a string, on stdout or stderr, with any exit code.
func TestGeneratedAgainstGeminiCLI(t *testing.T) {
	g := startGeminiHooks(t)
	r := rand.New(rand.NewPCG(71, 4))
	for i := range 200 {
		c := genCase(r)
		c.name = fmt.Sprint(i)
		t.Run(c.name, func(t *testing.T) {
			t.Logf("%s exit %d: stdout %q, stderr %q", c.event, c.code, c.stdout, c.stderr)
			g.check(t, c)
		})
	}
}

// check runs c's hook, then gemkit's answer for it, through Gemini CLI's
// own hook runner and aggregator.
func (g *geminiHooks) check(t *testing.T, c hookCase) {
	t.Helper()
	raw := g.run(t, c.event, []byte(c.stdout), []byte(c.stderr), c.code)
	a := filterCase(c)
	got := g.run(t, c.event, a.Stdout, a.Stderr, a.Code)
	eff, ok := got.Effects.(map[string]any)
	if got.Effects == "throws" || got.Effects != nil && !ok {
		t.Fatalf("Gemini CLI's reading of gemkit's answer: %v", got.Effects)
	}
	for _, k := range rewriting {
		if eff[k] != nil {
			t.Errorf("Gemini CLI acts on %s of gemkit's answer: %v", k, eff[k])
		}
	}
	if eff["request"] == true {
		t.Error("Gemini CLI rewrites the model's request from gemkit's answer")
	}
	checkToolConfig(t, eff["toolConfig"])
	if ctx, _ := eff["context"].(string); len([]rune(ctx)) > MaxText+80 {
		t.Errorf("context of %d characters", len([]rune(ctx)))
	}
	rawEff, _ := raw.Effects.(map[string]any)
	for _, k := range []string{"blocked", "stop", "ask"} {
		if blocks[c.event] && rawEff[k] == true && eff[k] != true {
			t.Errorf("the hook's %s is lost: %v", k, eff)
		}
	}
	if len(a.Dropped) > 0 || raw.Effects == "throws" || c.event == "AfterAgent" && rawEff["blocked"] == true {
		sameBut(t, rawEff, eff, a.Dropped)
		return
	}
	if !reflect.DeepEqual(raw.Effects, got.Effects) || raw.Success != got.Success {
		t.Errorf("Gemini CLI does other things with gemkit's answer:\n hook's:   %+v\n gemkit's: %+v", raw, got)
	}
}

var (
	genEvents = []string{"BeforeTool", "AfterTool", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel", "BeforeToolSelection", "SessionStart", "SessionEnd", "PreCompress", "Notification"}
	genTop    = []string{"continue", "stopReason", "decision", "reason", "systemMessage", "suppressOutput", "hookSpecificOutput", "Decision", "CONTINUE", "hookspecificoutput"}
	genInner  = []string{"tool_input", "tailToolCallRequest", "llm_request", "llm_response", "toolConfig", "additionalContext", "clearContext", "Tool_input", "hookEventName"}
	genValues = []string{`null`, `true`, `false`, `0`, `1`, `""`, `"deny"`, `"block"`, `"ask"`, `"allow"`, `"approve"`, `"NONE"`, `"ANY"`, `"x<y>"`, `"\u00e9\ud83d\ude00"`, `[]`, `["deny"]`, `{}`,
		`{"file_path":"x"}`, `{"mode":"NONE"}`, `{"mode":"ANY","allowedFunctionNames":["write_file"]}`, `{"name":"run_shell_command","args":{"command":"id"}}`,
		`{"messages":[{"role":"user","content":"hi"}]}`, `{"candidates":[{"content":{"parts":["ok"]}}]}`}
)

// genCase is a hook's run made of genTop, genInner and genValues.
func genCase(r *rand.Rand) hookCase {
	member := func(keys []string, inner string) string {
		k := keys[r.IntN(len(keys))]
		v := genValues[r.IntN(len(genValues))]
		if k == "hookSpecificOutput" && inner != "" {
			v = inner
		}
		return fmt.Sprintf("%q:%s", k, v)
	}
	var in, top []string
	for range r.IntN(4) {
		in = append(in, member(genInner, ""))
	}
	inner := "{" + strings.Join(in, ",") + "}"
	for range r.IntN(5) + 1 {
		top = append(top, member(genTop, inner))
	}
	text := "{" + strings.Join(top, ",") + "}"
	switch r.IntN(8) {
	case 0:
		b, _ := json.Marshal(text)
		text = string(b)
	case 1:
		text = "\ufeff" + text + "\n"
	case 2:
		text = "plain <text>"
	case 3:
		text = text[:len(text)-1]
	}
	c := hookCase{event: genEvents[r.IntN(len(genEvents))], code: []int{0, 0, 0, 1, 2, 3}[r.IntN(6)]}
	if r.IntN(4) == 0 {
		c.stdout, c.stderr = " \n", text
	} else {
		c.stdout, c.stderr = text, "a line on stderr"
	}
	return c
}

// checkToolConfig fails t unless tc, what Gemini CLI sets as the
// model's tool configuration, is none, its default (AUTO, which any
// answer of a BeforeToolSelection hook sets: mergeToolSelectionOutputs)
// or NONE.
func checkToolConfig(t *testing.T, tc any) {
	t.Helper()
	if tc == nil {
		return
	}
	b, _ := json.Marshal(tc)
	if s := string(b); s != `{"functionCallingConfig":{"allowedFunctionNames":[],"mode":"AUTO"}}` && s != `{"functionCallingConfig":{"allowedFunctionNames":[],"mode":"NONE"}}` {
		t.Errorf("Gemini CLI sets the tool configuration %s from gemkit's answer", s)
	}
}

// sameBut fails t unless Gemini CLI does with gemkit's answer (got)
// what it does with the hook's (raw), but for what gemkit dropped or
// cut, its note in the message, and an AfterAgent block's marked
// reason. An answer dropped whole, or one Gemini CLI could not read,
// is not compared.
func sameBut(t *testing.T, raw, got map[string]any, dropped []Drop) {
	t.Helper()
	if raw == nil || len(dropped) == 1 && dropped[0].Field == "" {
		return
	}
	skip := map[string]bool{"systemMessage": true, "toolConfig": true, "request": true, "reason": true}
	for _, k := range rewriting {
		skip[k] = true
	}
	for _, d := range dropped {
		if strings.HasSuffix(d.Field, "additionalContext") {
			skip["context"] = true
		}
	}
	for k, v := range raw {
		if !skip[k] && !reflect.DeepEqual(v, got[k]) {
			t.Errorf("%s: Gemini CLI takes %v of the hook's answer, %v of gemkit's", k, v, got[k])
		}
	}
}
