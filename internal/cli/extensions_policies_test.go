package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extview"
)

// TestPoliciesFailClosed: a switched extension whose policies gemkit
// cannot read as Gemini CLI will (here a date out of range, which V8's
// Date parser may take or not: Gemini CLI then reads the file, or skips
// it) is held in Gemini CLI, saying which file and why, and
// agreeing again does not end the hold while the file is so; doctor and
// describe say what Gemini CLI skips and drops of the rest.
func TestPoliciesFailClosed(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "linked-pol")
	writeFiles(t, src, map[string]string{
		"gemini-extension.json": `{"name": "linked-pol", "version": "1.0.0", "mcpServers": {"srv": {"command": "sh", "args": ["-c", "true"]}}}`,
		"policies/x.toml":       "since = 2021-13-01\n\n[[safety_checker]]\ntoolName = \"read_file\"\nchecker = { type = \"external\", name = \"hidden\" }\n",
	})
	e.mustRun("link", src, "--consent")

	out, _, _ := e.run("sandbox", "linked-pol")
	for _, want := range []string{
		"linked-pol is switched to gemkit, but gemkit cannot read its policies/x.toml as Gemini CLI will",
		"V8's to say",
		"Not switched whole: gemkit holds linked-pol in Gemini CLI",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the switch does not say %q:\n%s", want, out)
		}
	}
	st := extension.OpenStore(e.home)
	holds, _ := st.Holds()
	if holds["linked-pol"].Fix == "" {
		t.Fatalf("not held: %+v", holds)
	}
	if out := e.mustRun("list"); !strings.Contains(out, "held: linked-pol: gemkit cannot read its policies/x.toml as Gemini CLI will") {
		t.Errorf("list does not say the hold:\n%s", out)
	}
	if out, _, _ := e.run("doctor"); !strings.Contains(out, "warning: linked-pol: gemkit cannot read policies/x.toml as Gemini CLI will") || !strings.Contains(out, "switched, gemkit holds it in Gemini CLI") {
		t.Errorf("doctor:\n%s", out)
	}
	if out := e.mustRun("consent", "linked-pol", "--grant"); !strings.Contains(out, "gemkit holds it in Gemini CLI") {
		t.Errorf("consent --grant does not say the hold stays:\n%s", out)
	}

	// A folder of its own: one file skipped, one rule dropped, one kept.
	must(t, os.Remove(filepath.Join(src, "policies", "x.toml")))
	writeFiles(t, src, map[string]string{
		"policies/a.toml": "[[rule]]\ntoolName = \"glob\"\ndecision = \"allow\"\npriority = 1\n\n[[rule]]\ntoolName = \"web_fetch\"\ndecision = \"ask_user\"\npriority = 3\n",
		"policies/b.toml": "[[rule]]\ntoolName = \"glob\"\ndecision = \"deny\"\n",
	})
	if out := e.mustRun("consent", "linked-pol", "--grant"); !strings.Contains(out, "Gemini CLI runs linked-pol again") {
		t.Errorf("consent --grant does not release the hold:\n%s", out)
	}
	out, _, _ = e.run("doctor")
	for _, want := range []string{
		`warning: linked-pol: Gemini CLI skips policies/b.toml, saying so only in its debug log: schema validation failed: field "rule.0.priority": priority is required`,
		"note: linked-pol: Gemini CLI drops policies/a.toml: rule 1: an allow rule",
		"note: linked-pol: its policies/*.toml add 1 rule(s) and 0 of Gemini CLI's own checker(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if out := e.describe("linked-pol"); !strings.Contains(out, "Policies (policies/*.toml: policies/a.toml, policies/b.toml)") || !strings.Contains(out, "asks you before calls of web_fetch [priority 3; policies/a.toml: rule 2]") {
		t.Errorf("describe:\n%s", out)
	}
	var described struct {
		Policies extview.Policies `json:"policies"`
	}
	out = e.mustRun("describe", "linked-pol", "--json")
	must(t, json.Unmarshal([]byte(out), &described))
	if p := described.Policies; len(p.Rules) != 1 || !strings.HasPrefix(p.Rules[0], "asks you before calls of web_fetch") || len(p.Notes) != 2 {
		t.Errorf("describe --json's policies: %+v", p)
	}
}
