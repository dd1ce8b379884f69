package cli

import (
	"encoding/json"
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
	for _, tl := range got.Extensions[0].Tools {
		if !strings.Contains(e.describe("code-analyzer"), "      model tool: "+tl.Signature+"\n") {
			t.Errorf("describe does not show %s as the summary does", tl.Signature)
		}
	}

	e.mustRun("disable", "code-analyzer")
	if out := e.mustRun("summary"); out != "No gemkit extensions are enabled in this workspace.\n" {
		t.Errorf("summary with the only extension disabled: %q", out)
	}
	if out := e.mustRun("summary", "--json"); !strings.Contains(out, `"reason": "disabled in this workspace"`) {
		t.Errorf("--json does not say why the extension is left out:\n%s", out)
	}
}
