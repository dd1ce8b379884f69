package extension

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// loadPoliciesScript runs Gemini CLI 0.61's own loadExtensionPolicies
// (@google/gemini-cli-core's dist, the code its bundle holds) on each
// folder it is given and prints, one line each, the rules and checkers
// it keeps and the errors it logs.
const loadPoliciesScript = `
const { loadExtensionPolicies } = await import(process.argv[2]);
const pick = (r) => ({
  toolName: r.toolName, decision: r.decision, priority: r.priority, modes: r.modes, mcpName: r.mcpName,
  subagent: r.subagent, interactive: r.interactive, allowRedirection: r.allowRedirection,
  denyMessage: r.denyMessage, argsPattern: r.argsPattern ? r.argsPattern.source : undefined,
  checker: r.checker ? r.checker.type + ":" + r.checker.name : undefined,
});
for (const dir of process.argv.slice(3)) {
  const r = await loadExtensionPolicies("ext", dir);
  console.log(JSON.stringify({ rules: r.rules.map(pick), checkers: r.checkers.map(pick),
    errors: r.errors.filter((e) => e.severity !== "warning" && e.errorType !== "rule_validation").map((e) => e.fileName + ":" + e.errorType) }));
}
`

// geminiPolicies is what loadPoliciesScript prints for one folder.
type geminiPolicies struct {
	Rules    []policyView `json:"rules"`
	Checkers []policyView `json:"checkers"`
	Errors   []string     `json:"errors"`
}

// policyView is a rule or checker in the shape both sides print.
type policyView struct {
	ToolName         string   `json:"toolName"`
	Decision         string   `json:"decision,omitempty"`
	Priority         float64  `json:"priority"`
	Modes            []string `json:"modes,omitempty"`
	MCPName          *string  `json:"mcpName,omitempty"`
	Subagent         string   `json:"subagent,omitempty"`
	Interactive      *bool    `json:"interactive,omitempty"`
	AllowRedirection *bool    `json:"allowRedirection,omitempty"`
	DenyMessage      string   `json:"denyMessage,omitempty"`
	ArgsPattern      string   `json:"argsPattern,omitempty"`
	Checker          string   `json:"checker,omitempty"`
}

func viewOf(m policyMatch) policyView {
	v := policyView{ToolName: m.ToolName, Priority: 2 + m.Priority/1000, Modes: m.Modes, ArgsPattern: m.Pattern}
	if m.HasMCP {
		v.MCPName = &m.MCPName
	}
	return v
}

// gemkitView is what Policies gives, in the script's shape: the errors
// Gemini CLI logs for what gemkit says it skips and drops.
func gemkitView(p Policies) geminiPolicies {
	g := geminiPolicies{Rules: []policyView{}, Checkers: []policyView{}, Errors: []string{}}
	for _, r := range p.Rules {
		v := viewOf(r.policyMatch)
		v.Decision, v.Subagent, v.Interactive, v.AllowRedirection, v.DenyMessage = r.Decision, r.Subagent, r.Interactive, r.AllowRedirection, r.DenyMessage
		g.Rules = append(g.Rules, v)
	}
	for _, c := range p.Checkers {
		v := viewOf(c.policyMatch)
		v.Checker = c.Type + ":" + c.Name
		g.Checkers = append(g.Checkers, v)
	}
	for _, s := range p.Skipped {
		kind := "schema_validation"
		if strings.HasPrefix(s.Why, "TOML parsing failed") {
			kind = "toml_parse"
		}
		g.Errors = append(g.Errors, filepath.Base(s.File)+":"+kind)
	}
	for _, d := range p.Dropped {
		if strings.Contains(d, ": its pattern ") {
			file, _, _ := strings.Cut(d, ":")
			g.Errors = append(g.Errors, filepath.Base(file)+":regex_compilation")
		}
	}
	return g
}

// policyCases are policies folders, by name: each file of a case is
// written under policies/, but a name ending in @, which is a link to
// the file its body names.
var policyCases = map[string]map[string]string{
	"rules": {"a.toml": `
[[rule]]
toolName = "read_file"
decision = "deny"
priority = 5
denyMessage = "not here"

[[rule]]
toolName = ["write_file", "replace"]
decision = "ask_user"
priority = 999
modes = ["plan", "default"]
interactive = true

[[rule]]
toolName = "web_fetch"
decision = "allow"
priority = 1

[[rule]]
toolName = "glob"
decision = "deny"
priority = 2
modes = ["yolo"]

[[rule]]
toolName = ""
decision = "deny"
priority = 0
Extra = "dropped by zod"
`},
	"shell": {"s.toml": `
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git push", "rm -rf \"x\""]
decision = "deny"
priority = 10
allow_redirection = true
deny_message = "no"

[[rule]]
toolName = "run_shell_command"
commandPrefix = []
decision = "deny"
priority = 11

[[rule]]
toolName = "run_shell_command"
commandPrefix = ""
commandRegex = "curl .*"
decision = "ask_user"
priority = 12

[[rule]]
toolName = ["run_shell_command", "glob"]
commandPrefix = "ls"
decision = "deny"
priority = 13

[[rule]]
toolName = "grep"
argsPattern = "(a+)+"
decision = "deny"
priority = 14

[[rule]]
toolName = "grep"
argsPattern = ""
decision = "deny"
priority = 15
`},
	"mcp": {"m.toml": `
[[rule]]
toolName = "*"
mcpName = "github"
decision = "deny"
priority = 1

[[rule]]
toolName = "create_issue"
mcpName = "*"
decision = "ask_user"
priority = 2

[[rule]]
toolName = "x"
mcpName = ""
subagent = "helper"
decision = "deny"
priority = 3

[[safety_checker]]
toolName = "*"
mcpName = "github"
checker = { type = "in-process", name = "allowed-path", config = { included_args = ["path"] } }

[[safety_checker]]
toolName = "push"
mcpName = "github"
priority = 5000
checker = { type = "external", name = "lint-guard", required_context = ["environment"] }
`},
	"checkers": {"c.toml": `
[[safety_checker]]
toolName = "write_file"
priority = 3
[safety_checker.checker]
type = "external"
name = "Not Valid"

[[safety_checker]]
toolName = ["read_file", "glob"]
priority = 1
modes = ["default"]
checker = { type = "in-process", name = "conseca" }

[[safety_checker]]
toolName = "x"
modes = ["autoEdit", "yolo"]
checker = { type = "external", name = "yolo-only" }
`},
	"schema": {
		"1-missing.toml":   "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\n",
		"2-range.toml":     "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 1000\n",
		"3-float.toml":     "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 5.5\n",
		"4-whole.toml":     "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 5.0\n",
		"5-case.toml":      "[[rule]]\nToolName = \"a\"\ndecision = \"deny\"\npriority = 5\n",
		"6-decision.toml":  "[[rule]]\ntoolName = \"a\"\ndecision = \"Deny\"\npriority = 5\n",
		"7-table.toml":     "[rule]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 5\n",
		"8-mode.toml":      "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 5\nmodes = [\"auto_edit\"]\n",
		"9-checker.toml":   "[[safety_checker]]\ntoolName = \"a\"\nchecker = { type = \"in-process\", name = \"other\" }\n",
		"a-nochecker.toml": "[[safety_checker]]\ntoolName = \"a\"\n",
		"b-big.toml":       "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 9007199254740993\n",
		"c-nan.toml":       "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = nan\n",
		"d-annot.toml":     "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 1\ntoolAnnotations = [1]\n",
		"e-negzero.toml":   "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = -0.0\n",
	},
	"toml": {
		"dup.toml":   "[[rule]]\ntoolName = \"a\"\ntoolName = \"b\"\ndecision = \"deny\"\npriority = 1\n",
		"bom.toml":   "\ufeff[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 1\n",
		"good.toml":  "rule = [{toolName = \"b\", decision = \"deny\", priority = 1}]\n",
		"skip.TOML":  "[[rule]]\ntoolName = \"c\"\ndecision = \"deny\"\npriority = 1\n",
		"notes.txt":  "not a policy",
		"link.toml@": "good.toml",
	},
}

// writePolicyCase writes the case files in dir/policies.
func writePolicyCase(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	pol := filepath.Join(dir, "policies")
	if err := os.MkdirAll(filepath.Join(pol, "sub.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if link, ok := strings.CutSuffix(name, "@"); ok {
			if err := os.Symlink(body, filepath.Join(pol, link)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(pol, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoliciesAsGeminiCLI holds Policies to Gemini CLI 0.61's own
// loadExtensionPolicies on the same folders: the same rules and
// checkers, in the same order, and a skipped file or dropped rule for
// each error it logs.
func TestPoliciesAsGeminiCLI(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli-core/package.json")
	names := slices.Sorted(maps.Keys(policyCases))
	dirs := make([]string, len(names))
	for i, n := range names {
		dirs[i] = filepath.Join(t.TempDir(), n)
		writePolicyCase(t, dirs[i], policyCases[n])
	}
	script := filepath.Join(t.TempDir(), "load.mjs")
	os.WriteFile(script, []byte(loadPoliciesScript), 0o644)
	core := filepath.Join(interop, "node_modules", "@google", "gemini-cli-core", "dist", "src", "policy", "config.js")
	cmd := exec.Command(node, append([]string{script, core}, policyDirsArgs(dirs)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(names) {
		t.Fatalf("node printed %d lines for %d folders:\n%s\n%s", len(lines), len(names), out, stderr.String())
	}
	for i, n := range names {
		var want geminiPolicies
		if err := json.Unmarshal([]byte(lines[i]), &want); err != nil {
			t.Fatal(err)
		}
		p := (&Extension{Dir: dirs[i]}).Policies()
		if len(p.Unsure) > 0 {
			t.Errorf("%s: unsure: %v", n, p.Unsure)
		}
		got := gemkitView(p)
		slices.Sort(got.Errors)
		slices.Sort(want.Errors)
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		if !bytes.Equal(g, w) {
			t.Errorf("%s:\ngemkit:\n%s\nGemini CLI:\n%s", n, g, w)
		}
	}
}

func policyDirsArgs(dirs []string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		out[i] = filepath.Join(d, "policies")
	}
	return out
}

// TestPoliciesUnsure: what gemkit cannot read as Gemini CLI will is
// said, not guessed: a folder that is a link out of the extension, a
// file past gemkit's bound, a document whose reading is V8's or breaks
// the TOML library.
func TestPoliciesUnsure(t *testing.T) {
	outside := t.TempDir()
	writePolicyCase(t, outside, map[string]string{"a.toml": "[[rule]]\ntoolName = \"a\"\ndecision = \"deny\"\npriority = 1\n"})
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"link out", func(dir string) { os.Symlink(filepath.Join(outside, "policies"), filepath.Join(dir, "policies")) }, "outside its folder"},
		{"too large", func(dir string) {
			writePolicyCase(t, dir, map[string]string{"big.toml": "# " + strings.Repeat("x", maxPolicyBytes) + "\n"})
		}, "larger than"},
		{"inherited key", func(dir string) {
			writePolicyCase(t, dir, map[string]string{"p.toml": "[hasOwnProperty]\ncall = 1\n"})
		}, "every file it reads after this one"},
		{"date", func(dir string) { writePolicyCase(t, dir, map[string]string{"d.toml": "when = 2021-13-01\n"}) }, "V8's to say"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			p := (&Extension{Dir: dir}).Policies()
			if len(p.Unsure) != 1 || !strings.Contains(p.Unsure[0].Why, tc.want) {
				t.Errorf("unsure %v, want one saying %q", p.Unsure, tc.want)
			}
		})
	}
}

func ExamplePolicies_External() {
	p := Policies{Checkers: []PolicyChecker{{Type: "in-process", Name: "allowed-path"}, {Type: "external", Name: "lint-guard"}}}
	for _, c := range p.External() {
		fmt.Println(c.Name)
	}
	// Output: lint-guard
}

// TestConsentTextNamesPolicies: what an extension's policies change and
// run is in the text the person agrees to, with what Gemini CLI drops.
func TestConsentTextNamesPolicies(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"name": "guarded", "version": "1.0.0"}`), 0o644)
	writePolicyCase(t, dir, map[string]string{"p.toml": `
[[rule]]
toolName = "run_shell_command"
commandPrefix = "git push"
decision = "deny"
priority = 10

[[rule]]
toolName = "*"
decision = "allow"
priority = 999

[[safety_checker]]
toolName = "write_file"
checker = { type = "external", name = "lint-guard" }
`})
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(ConsentText(ext, "Installing"), "\n")
	for _, want := range []string{
		"Rules it adds to Gemini CLI's policy (policies/*.toml), " + PolicyTierWords,
		`  - denies calls of run_shell_command whose command starts with "git push" [priority 10; policies/p.toml: rule 1]`,
		"  - names an external safety checker, lint-guard, a program for Gemini CLI to start on calls of write_file: Gemini CLI 0.61 starts none",
		"  - Gemini CLI drops policies/p.toml: rule 2: an allow rule",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the consent text lacks %q:\n%s", want, text)
		}
	}
}
