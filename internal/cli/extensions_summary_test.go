package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtensionsSummary checks that `extensions summary` prints the
// summary a model gets, that --json carries the same text with the
// structure, schemas and left-out extensions, and that describe names
// each tool as the summary does.
func TestExtensionsSummary(t *testing.T) {
	e := newEnv(t)
	e.mustRun("install", "testdata/extensions/code-analyzer", "--consent")
	text := e.mustRun("summary")
	checkGolden(t, "summary-code-analyzer.txt", e.scrub(text))
	jsonOut := e.mustRun("summary", "--json")
	checkGolden(t, "summary-code-analyzer.json", e.scrub(jsonOut))

	var got summaryJSON
	if err := json.Unmarshal([]byte(jsonOut), &got); err != nil {
		t.Fatal(err)
	}
	if got.Text != text || len(got.Tools) != 1 || got.Tools[0].Name != "code-analyzer_lintFile" {
		t.Errorf("--json disagrees with the text: %+v", got)
	}
	desc := e.describe("code-analyzer")
	for _, tl := range got.Extensions[0].Tools {
		if !strings.Contains(desc, "      model tool: "+tl.Signature+"\n") {
			t.Errorf("describe does not show %s as the summary does", tl.Signature)
		}
	}
	if len(got.Extensions[0].Skills) != 1 {
		t.Fatalf("the summary lists skills %+v, want fix-lint", got.Extensions[0].Skills)
	}
	for _, sk := range got.Extensions[0].Skills {
		if !strings.Contains(desc, "\n  "+sk.Name+": "+sk.Description+"\n") ||
			!strings.Contains(desc, `      model reads it with: read_doc(extension: "code-analyzer", name: "skill:`+sk.Name+`")`) {
			t.Errorf("describe does not show skill %s as the summary does:\n%s", sk.Name, desc)
		}
	}

	// A SKILL.md that is not a skill is in neither list, and describe
	// says why.
	draft := filepath.Join(e.home, ".gemini", "extensions", "code-analyzer", "skills", "draft", "SKILL.md")
	os.MkdirAll(filepath.Dir(draft), 0o755)
	if err := os.WriteFile(draft, []byte("---\nname: draft\n---\nnot yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := e.mustRun("summary"); strings.Contains(out, "draft") {
		t.Errorf("the summary lists a SKILL.md without a description:\n%s", out)
	}
	if desc := e.describe("code-analyzer"); !strings.Contains(desc, "Agent skills (1)") ||
		!strings.Contains(desc, "  not a skill: skills/draft/SKILL.md: its front matter has no description (Gemini CLI skips it too)\n") {
		t.Errorf("describe does not explain the skipped SKILL.md:\n%s", desc)
	}
	os.Remove(draft)

	e.mustRun("disable", "code-analyzer")
	if out := e.mustRun("summary"); out != "No gemkit extensions are enabled in this workspace.\n" {
		t.Errorf("summary with the only extension disabled: %q", out)
	}
	if out := e.mustRun("summary", "--json"); !strings.Contains(out, `"reason": "disabled in this workspace"`) {
		t.Errorf("--json does not say why the extension is left out:\n%s", out)
	}
}
