//go:build unix

package cli

import (
	"context"
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

// TestMCPSetUpLinesAsDocs: each line gemkit prints to set up `gemkit
// mcp` (its --help, the words on stderr when started by hand on a
// terminal) gives Claude Code's and Gemini CLI's lines as docs/mcp.md
// recommends them, and no `claude mcp add` of the stdio server without a
// scope.
func TestMCPSetUpLinesAsDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(gemkittest.RepoRoot(t), "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	var help, errb strings.Builder
	if code := Run(context.Background(), []string{"mcp", "--help"}, Streams{In: strings.NewReader(""), Out: &help, Err: &errb}); code != ExitOK {
		t.Fatalf("gemkit mcp --help: exit %d\n%s", code, errb.String())
	}
	for _, c := range []struct{ where, text string }{
		{"gemkit mcp --help", help.String()},
		{"gemkit mcp on a terminal", waitingLine},
	} {
		for _, want := range []string{"claude mcp add -s user gemkit -- gemkit mcp", "gemini mcp add -s user --trust gemkit gemkit mcp"} {
			if !strings.Contains(string(doc), want) {
				t.Fatalf("docs/mcp.md no longer recommends %q", want)
			}
			if !strings.Contains(c.text, want) {
				t.Errorf("%s lacks %q", c.where, want)
			}
		}
		for _, m := range addLineRE.FindAllString(c.text, -1) {
			if strings.HasPrefix(m, "claude") && strings.Contains(m, "gemkit mcp") && !strings.Contains(m, "-s user") && !strings.Contains(m, "-t http") {
				t.Errorf("%s: %q has no scope", c.where, m)
			}
		}
	}
}
