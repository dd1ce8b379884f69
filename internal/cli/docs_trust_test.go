//go:build unix

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// checkGeminiTrust: after a block that runs `gemini mcp add … gemkit …`
// with the real Gemini CLI, its user settings still trust gemkit. Gemini
// CLI 0.61 replaces a server's whole entry when it is added again
// ("updated"), so a later line without --trust drops the trust an earlier
// one gave, and `gemini -p` then gets none of gemkit's tools (not being
// interactive, its policy turns "ask" into "deny").
func checkGeminiTrust(t *testing.T, e *docEnv, file string, b docBlock) {
	t.Helper()
	added := false
	for _, c := range b.commands {
		added = added || (strings.HasPrefix(c, "gemini mcp add ") && !hasPrefix(c, b.skip))
	}
	if !added {
		return
	}
	data, err := os.ReadFile(filepath.Join(e.home, ".gemini", "settings.json"))
	if err != nil {
		t.Errorf("%s, block at line %d: gemini mcp add left no settings: %v", file, b.line, err)
		return
	}
	var s struct {
		MCPServers map[string]struct {
			Trust bool `json:"trust"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Errorf("%s, block at line %d: settings: %v", file, b.line, err)
		return
	}
	if srv, ok := s.MCPServers["gemkit"]; !ok || !srv.Trust {
		t.Errorf("%s, block at line %d: after its gemini mcp add, Gemini CLI does not trust gemkit (gemini -p would get none of its tools):\n%s", file, b.line, data)
	}
}

// TestCodeIntelSetUp runs the ```sh block of docs/code-intel.md's set-up
// by the README's rules, with the real Gemini CLI: its `gemini mcp add`
// must leave gemkit trusted (checkGeminiTrust).
func TestCodeIntelSetUp(t *testing.T) {
	t.Parallel()
	root := gemkittest.RepoRoot(t)
	text, err := os.ReadFile(filepath.Join(root, "docs", "code-intel.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := parseBlocks(string(text))
	if len(blocks) == 0 || !blocks[0].gemini {
		t.Fatal("docs/code-intel.md has no set-up block run with Gemini CLI (readme-test: gemini)")
	}
	runDocBlocks(t, root, "docs/code-intel.md", blocks[:1])
}

// addLineRE finds a `gemini mcp add` or `claude mcp add` and what follows
// it up to the end of its code span or line.
var addLineRE = regexp.MustCompile("(gemini|claude) mcp add[^`\n]*")

// TestDocsKeepGeminiTrust: every `gemini mcp add` of gemkit in README.md,
// docs/ and `gemkit mcp`'s own help and set-up lines carries --trust (see
// checkGeminiTrust for why), and every doc that shows Claude Code's
// `claude mcp add` without a scope says that it adds the server for the
// current project only.
func TestDocsKeepGeminiTrust(t *testing.T) {
	root := gemkittest.RepoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "internal", "cli", "mcp.go"))
	gemini, claude := 0, 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		rel, _ := filepath.Rel(root, f)
		unscoped := false
		for _, m := range addLineRE.FindAllString(text, -1) {
			// A command names the server; prose ("`gemini mcp add` of a
			// name") does not.
			if !strings.Contains(m, "gemkit") {
				continue
			}
			if strings.HasPrefix(m, "gemini") {
				gemini++
				if !strings.Contains(m, "--trust") {
					t.Errorf("%s: %q has no --trust", rel, m)
				}
				continue
			}
			claude++
			unscoped = unscoped || (!strings.Contains(m, "-s ") && !strings.Contains(m, "--scope") && !strings.Contains(m, "-t http"))
		}
		if unscoped && strings.HasSuffix(f, ".md") && !strings.Contains(text, "current project only") {
			t.Errorf("%s shows `claude mcp add` without a scope and does not say it adds gemkit for the current project only (-s user: every project)", rel)
		}
	}
	if gemini < 6 || claude < 3 {
		t.Fatalf("found %d `gemini mcp add` and %d `claude mcp add` lines of gemkit; the docs have more", gemini, claude)
	}
}
