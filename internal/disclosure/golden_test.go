package disclosure

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/golden"
)

// checkGolden compares got with testdata/golden/name (-update rewrites
// it).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), got)
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// analyzer is the plan's example extension, with every argument type, a
// long description and an example.
const analyzer = `{"name": "code-analyzer", "version": "1.0.0",
 "description": "An extension for analyzing and linting code files.",
 "permissions": {"filesystem": {"read": "workspace"}},
 "tools": [
  {"name": "lintFile", "description": "Lints a given file and returns a list of issues as a JSON object. It understands JavaScript, TypeScript, Go and Python, and reports each issue with its line, column, rule and a suggested fix.\nSecond line that never reaches the summary.",
   "executable": "tools/lint.py", "runtime": "python", "output": "json",
   "args": [{"name": "file", "type": "string", "description": "The path to the file to lint."},
            {"name": "maxIssues", "type": "integer", "description": "Stop after this many issues."},
            {"name": "threshold", "type": "number"},
            {"name": "strict", "type": "boolean", "description": "Treat warnings as errors."},
            {"name": "rules", "type": "array", "description": "Rules to apply; all when empty."}]},
  {"name": "listRules", "description": "Lists the rules.", "executable": "tools/rules.sh", "runtime": "shell"}],
 "docs": [{"name": "linter-rules", "description": "A document explaining the linting rules used by the lintFile tool.", "file": "docs/rules.md"}],
 "examples": [{"prompt": "Lint the file src/index.js", "tool_call": "lintFile(file=\"src/index.js\")"},
              {"prompt": "Which rules are there?", "tool_call": "listRules()"}]}`

var analyzerFiles = map[string]string{"tools/lint.py": "print('{}')\n", "tools/rules.sh": "echo rules\n", "docs/rules.md": "# Rules\n"}

// genExt is a generated extension with three tools, two docs and two
// examples, for the budget cases.
func genExt(i int) string {
	return fmt.Sprintf(`{"name": "ext%02d", "version": "1.0.0", "description": "Generated extension number %d for budget tests.",
 "tools": [
  {"name": "alpha", "description": "Does the first thing with the given path.", "executable": "t.sh", "runtime": "shell", "args": [{"name": "path", "type": "string"}]},
  {"name": "beta", "description": "Does the second thing, quietly if asked.", "executable": "t.sh", "runtime": "shell", "args": [{"name": "quiet", "type": "boolean"}]},
  {"name": "gamma", "description": "Does the third thing to every name.", "executable": "t.sh", "runtime": "shell", "args": [{"name": "names", "type": "array"}]}],
 "docs": [{"name": "intro", "description": "What the extension is for.", "file": "intro.md"}, {"name": "faq", "description": "Questions people ask.", "file": "faq.md"}],
 "examples": [{"prompt": "Do the first thing with README.md", "tool_call": "alpha(path=\"README.md\")"}, {"prompt": "Quietly do the second", "tool_call": "beta(quiet=true)"}]}`, i, i)
}

var genFiles = map[string]string{"t.sh": "echo ok\n", "intro.md": "intro\n", "faq.md": "faq\n"}

// reviewer is an extension with agent skills and no tools: a skill in a
// folder of its own with a description over several lines, one at the
// top of skills/, and a SKILL.md that is not a skill.
const reviewer = `{"name": "reviewer", "version": "1.0.0", "description": "Review workflows as agent skills.",
 "docs": [{"name": "checklist", "description": "The review checklist.", "file": "checklist.md"}]}`

var reviewerFiles = map[string]string{
	"checklist.md":                "- tests\n",
	"skills/code-review/SKILL.md": "---\nname: code-review\ndescription: >\n  Review a change for correctness, tests and style.\n  Use it when asked to review a diff or a pull request.\n---\n\n# Code review\n\nRead the diff, then the tests.\n",
	"skills/SKILL.md":             "---\nname: \"house:style\"\ndescription: The team's writing style for docs and commit messages.\n---\nWrite short sentences.\n",
	"skills/broken/SKILL.md":      "# No front matter\n",
	"skills/release/SKILL.md":     "---\nname: release\ndescription: |\n  Cut a release: bump the version in every manifest, write the changelog entry from the merged\n  pull requests, tag the commit and push the tag. Use it when the person asks for a release,\n  a version bump or a changelog, and never on a branch other than main.\nlicense: MIT\n---\n1. Bump.\n2. Tag.\n",
}

type goldenCase struct {
	name   string
	budget int
	setup  func(t *testing.T, home, ws string)
	// omitted is what the budget must have cut, checked besides the
	// golden text so a golden update cannot silently change the level.
	omitted *Omitted
}

func goldenCases() []goldenCase {
	many := func(n int) func(t *testing.T, home, ws string) {
		return func(t *testing.T, home, ws string) {
			for i := 1; i <= n; i++ {
				writeExt(t, home, genExt(i), copyFiles(genFiles))
			}
		}
	}
	return []goldenCase{
		{name: "empty", setup: func(*testing.T, string, string) {}},
		{name: "one", setup: func(t *testing.T, home, ws string) { writeExt(t, home, analyzer, copyFiles(analyzerFiles)) }},
		{name: "several", setup: func(t *testing.T, home, ws string) {
			writeExt(t, home, analyzer, copyFiles(analyzerFiles))
			// Two tool names that map to the same exposed name, one that
			// is too long, and a name that starts with a digit.
			writeExt(t, home, `{"name": "3d-tools", "version": "0.1.0", "description": "Tools\twith\u0007 control characters.",
			 "tools": [{"name": "mesh.fix", "description": "Fixes a mesh.", "executable": "t.sh", "runtime": "shell"},
			           {"name": "mesh_fix", "description": "Also fixes a mesh.", "executable": "t.sh", "runtime": "shell"},
			           {"name": "a_tool_name_that_is_long_enough_to_push_the_exposed_name_past_64", "description": "Long.", "executable": "t.sh", "runtime": "shell"},
			           {"name": "hidden", "description": "Hidden by another extension's excludeTools.", "executable": "t.sh", "runtime": "shell"}]}`,
				map[string]string{"t.sh": "echo ok\n"})
			writeExt(t, home, `{"name": "hider", "version": "1.0.0", "excludeTools": ["_3d-tools_hidden", "run_shell_command"],
			 "docs": [{"name": "only-doc", "file": "d.md"}]}`, map[string]string{"d.md": "doc\n"})
			writeExt(t, home, `{"name": "off", "version": "1.0.0", "tools": [{"name": "x", "description": "x", "executable": "t.sh", "runtime": "shell"}]}`,
				map[string]string{"t.sh": "echo\n"})
			if err := extension.OpenStore(home).WithWorkspace(ws).Disable("off", extension.ScopeUser); err != nil {
				t.Fatal(err)
			}
			writeExt(t, home, `{"name": "broken", "version": "1.0.0", "tools": [{"name": "x", "executable": "missing.sh", "runtime": "cobol"}]}`, map[string]string{})
		}},
		{name: "skills", setup: func(t *testing.T, home, ws string) {
			writeExt(t, home, analyzer, copyFiles(analyzerFiles))
			writeExt(t, home, reviewer, copyFiles(reviewerFiles))
		}},
		{name: "budget-skills", budget: 1040, setup: func(t *testing.T, home, ws string) {
			writeExt(t, home, analyzer, copyFiles(analyzerFiles))
			writeExt(t, home, reviewer, copyFiles(reviewerFiles))
		}, omitted: &Omitted{Examples: true, Descriptions: true, Signatures: true, SkillDescriptions: true}},
		{name: "budget-full", budget: 6000, setup: many(5)},
		{name: "budget-examples", budget: 2600, setup: many(5), omitted: &Omitted{Examples: true}},
		{name: "budget-descriptions", budget: 1800, setup: many(5), omitted: &Omitted{Examples: true, Descriptions: true}},
		{name: "budget-signatures", budget: 1200, setup: many(5), omitted: &Omitted{Examples: true, Descriptions: true, Signatures: true}},
		{name: "budget-extensions", budget: 740, setup: many(5), omitted: &Omitted{Examples: true, Descriptions: true, Signatures: true, Extensions: []string{"ext02", "ext03", "ext04", "ext05"}}},
	}
}

func copyFiles(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestSummaryGolden checks the summary text and JSON, and the tool list
// with its schemas, for several extension sets.
func TestSummaryGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			ws := filepath.Join(home, "ws")
			os.MkdirAll(ws, 0o755)
			c.setup(t, home, ws)
			set, err := Load(extension.OpenStore(home).WithWorkspace(ws))
			if err != nil {
				t.Fatal(err)
			}
			sum := set.Summary(c.budget)
			if runes(sum.Text) > sum.Budget {
				t.Errorf("the summary has %d characters, over its budget of %d", runes(sum.Text), sum.Budget)
			}
			if fmt.Sprint(sum.Omitted) != fmt.Sprint(c.omitted) {
				t.Errorf("omitted %+v, want %+v", sum.Omitted, c.omitted)
			}
			checkGolden(t, "summary-"+c.name+".txt", []byte(sum.Text))
			checkGolden(t, "summary-"+c.name+".json", indentJSON(t, sum))
			if c.budget == 0 {
				type skipped struct {
					Skipped []Skipped `json:"skipped"`
					Tools   []Tool    `json:"tools"`
				}
				// Paths in the reasons differ per run.
				for i := range set.Skipped {
					set.Skipped[i].Reason = strings.ReplaceAll(set.Skipped[i].Reason, home, "$HOME")
				}
				checkGolden(t, "tools-"+c.name+".json", indentJSON(t, skipped{set.Skipped, set.Tools()}))
			}
		})
	}
}

// TestExposedNames checks the naming rule on its edge cases, with the
// default limit and with others: with the default, every name still fits
// the model APIs' 64 characters behind Claude Code's mcp__gemkit__.
func TestExposedNames(t *testing.T) {
	long := strings.Repeat("x", 64)
	for _, c := range []struct {
		ext, tool string
		limit     int
		want      string
	}{
		{"code-analyzer", "lintFile", 0, "code-analyzer_lintFile"},
		{"demo", "a.b", 0, "demo_a_b"},
		{"3d", "mesh", 0, "_3d_mesh"},
		{"read", "doc", 0, "read_doc_" + hashSuffix("read", "doc")},
		{"e", long[:46], 0, "e_" + long[:46]},
		{"e", long[:47], 0, "e_" + long[:37] + "_" + hashSuffix("e", long[:47])},
		{"e", long, 0, "e_" + long[:37] + "_" + hashSuffix("e", long)},
		{"e", long[:47], 64, "e_" + long[:47]},
		{"e", long, 64, "e_" + long[:53] + "_" + hashSuffix("e", long)},
		{"e", long, MinNameLimit, "e_" + long[:5] + "_" + hashSuffix("e", long)},
	} {
		limit := c.limit
		if limit == 0 {
			limit = DefaultNameLimit
			if got := ExposedName(c.ext, c.tool); got != c.want {
				t.Errorf("ExposedName(%q, %q) = %q, want %q", c.ext, c.tool, got, c.want)
			}
		}
		got := exposedName(c.ext, c.tool, limit)
		if got != c.want || len(got) > limit {
			t.Errorf("exposedName(%q, %q, %d) = %q, want %q", c.ext, c.tool, limit, got, c.want)
		}
		if c.limit == 0 && len("mcp__gemkit__"+got) > MaxNameLen {
			t.Errorf("mcp__gemkit__%s is over %d characters", got, MaxNameLen)
		}
	}
}

// TestNameLimited checks that a Source with a name limit gives a Set of
// names that fit it, and that a limit out of range is refused.
func TestNameLimited(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	tool := strings.Repeat("t", 50)
	os.WriteFile(filepath.Join(dir, "gemini-extension.json"), []byte(`{"name": "e", "version": "1.0.0",
	 "tools": [{"name": "`+tool+`", "description": "Long.", "executable": "t.sh", "runtime": "shell"}]}`), 0o644)
	os.WriteFile(filepath.Join(dir, "t.sh"), []byte("echo\n"), 0o755)
	for _, limit := range []int{0, 64, 30} {
		src := DirSource(dir, ws)
		if limit != 0 {
			var err error
			if src, err = NameLimited(src, limit); err != nil {
				t.Fatal(err)
			}
		}
		set, err := src.Load()
		if err != nil {
			t.Fatal(err)
		}
		want := exposedName("e", tool, cmp.Or(limit, DefaultNameLimit))
		if got := set.Tools()[0].Name; got != want || set.Tool(got) == nil {
			t.Errorf("limit %d: %q, want %q", limit, got, want)
		}
	}
	for _, bad := range []int{MinNameLimit - 1, MaxNameLen + 1} {
		if _, err := NameLimited(DirSource(dir, ws), bad); err == nil {
			t.Errorf("limit %d was accepted", bad)
		}
	}
}

func hashSuffix(ext, tool string) string {
	h := hashedName("", ext, tool, MaxNameLen)
	return h[1:]
}
