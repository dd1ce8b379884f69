package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/fakemodel"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestGeminiCLI runs the real Gemini CLI (the pinned @google/gemini-cli,
// offline, against the scripted model server) with `gemkit mcp` in its
// settings, over stdio and over Streamable HTTP (httpUrl with the bearer
// token in headers). The scripted model calls an extension tool and
// read_doc for a doc and for an agent skill; the test asserts what the
// CLI sent the model next: the summary (the server's instructions, with
// the skill listed) in the first request, then the tool's real output,
// then the doc's text, then the skill's instructions.
func TestGeminiCLI(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) { testGeminiCLI(t, transport) })
	}
}

func testGeminiCLI(t *testing.T, transport string) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	f := newFixture(t)
	server := map[string]any{"command": f.bin, "args": []string{"mcp"}}
	if transport == "http" {
		url, token := startHTTP(t, f)
		server = map[string]any{"httpUrl": url, "headers": map[string]string{"Authorization": "Bearer " + token}}
	}

	model := scriptedModel(t,
		fakemodel.Call("mcp_gemkit_demo_count", map[string]any{"word": "hello", "times": 3}),
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "demo", "name": "guide"}),
		fakemodel.Call("mcp_gemkit_read_doc", map[string]any{"extension": "demo", "name": "skill:triage"}),
		fakemodel.Text("All done."),
	)

	settings := map[string]any{
		"security": map[string]any{
			"auth":        map[string]any{"selectedType": "gemini-api-key"},
			"folderTrust": map[string]any{"enabled": false},
		},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"general":    map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		"mcpServers": map[string]any{"gemkit": server},
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), string(b), 0o600)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stdout, report, runErr := runHeadless(f.headlessGemini(ctx, node, interop, model.URL, "Say hello three times, then read the demo guide."), model)
	turns := wantTurns(t, model, 4, runErr, report)
	first, err := turns[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Join(first.FunctionNames(), " ")
	for _, want := range []string{"mcp_gemkit_demo_count", "mcp_gemkit_read_doc"} {
		if !strings.Contains(" "+names+" ", " "+want+" ") {
			t.Fatalf("the CLI did not offer %s; it offered: %s", want, names)
		}
	}
	for _, want := range []string{"You have the following extensions available.", "`demo_count(word: string, times: integer)`: Repeats a word.", "`guide`: How the demo tools work.",
		"  - **Skills**:\n    - `triage`: Sort incoming bug reports by severity.\n", disclosure.SkillsHeader} {
		if !strings.Contains(first.Text(), want) {
			t.Errorf("the first request does not carry the summary line %q", want)
		}
	}

	// Gemini CLI lists the same skill itself, from the extension it loads
	// from the same extensions folder (docs/mcp.md says so).
	if !strings.Contains(first.Text(), "<name>triage</name>") {
		t.Errorf("Gemini CLI no longer lists the extension's skill in its own prompt; docs/mcp.md says it does")
	}

	second, _ := turns[1].Generate()
	if !responseContains(second, "mcp_gemkit_demo_count", `{"word":"hello","times":3,"files":"a.txt"}`) {
		t.Errorf("the second request does not carry the tool's output: %+v", second.FunctionResponses())
	}
	third, _ := turns[2].Generate()
	if !responseContains(third, "mcp_gemkit_read_doc", "The count tool repeats a word.") {
		t.Errorf("the third request does not carry the doc: %+v", third.FunctionResponses())
	}
	fourth, _ := turns[3].Generate()
	if !responseContains(fourth, "mcp_gemkit_read_doc", "Label each report P0 to P3") {
		t.Errorf("the fourth request does not carry the skill's instructions: %+v", fourth.FunctionResponses())
	}
	if !strings.Contains(stdout, "All done.") {
		t.Errorf("the CLI did not print the final answer:\n%s", report())
	}
}

// responseContains reports whether g has a function response named name
// whose JSON holds text.
func responseContains(g fakemodel.GenerateRequest, name, text string) bool {
	for _, r := range g.FunctionResponses() {
		b, _ := json.Marshal(r.Response)
		var s string
		// The text sits inside JSON strings: compare with it decoded.
		if r.Name == name && (strings.Contains(string(b), text) || strings.Contains(unquoteAll(b, &s), text)) {
			return true
		}
	}
	return false
}

// unquoteAll is the response with one level of JSON string escaping
// removed, so a tool's JSON output matches as it was printed.
func unquoteAll(b []byte, s *string) string {
	*s = strings.NewReplacer(`\"`, `"`, `\n`, "\n", `\\`, `\`).Replace(string(b))
	return *s
}

// geminiSetUp is the line of docs/mcp.md's "Set-up for Gemini CLI" that
// adds the server, as a person copies it.
func geminiSetUp(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(gemkittest.RepoRoot(t), "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Set-up for Gemini CLI")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/mcp.md has no ```sh block under \"## Set-up for Gemini CLI\"")
	}
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "gemini mcp add ") {
			return strings.Fields(line)
		}
	}
	t.Fatalf("the set-up block of docs/mcp.md has no `gemini mcp add` line:\n%s", block)
	return nil
}

// TestGeminiCLISetUp follows docs/mcp.md with the real Gemini CLI 0.61 and
// its default settings (folder trust on): the set-up line as written,
// `gemini` in tmux answering its folder-trust question, then `gemini -p`
// in the same folder. Both offer the model gemkit's tools. In the
// terminal interface a call without consent shows gemkit's refusal to the
// person; the model's own `gemkit extensions consent --grant` is asked
// about by Gemini CLI, then waits for the person to type the extension's
// name and records nothing meanwhile; the person, reaching it with Tab,
// types it, and the tool then runs. The person's own way, ! and the
// command at the prompt, records consent the same way.
func TestGeminiCLISetUp(t *testing.T) {
	t.Parallel()
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	tmux := gemkittest.Tool(t, "tmux", "tmux")
	f := newFixture(t)
	bin := filepath.Join(f.root, "bin")
	cli := geminiJS(interop)
	writeFile(t, filepath.Join(bin, "gemini"), "#!/bin/sh\nexec '"+node+"' '"+cli+"' \"$@\"\n", 0o755)
	if err := os.Symlink(f.bin, filepath.Join(bin, "gemkit")); err != nil {
		t.Fatal(err)
	}
	// Only what a person with a key has after Gemini CLI's first run.
	writeFile(t, filepath.Join(f.home, ".gemini", "settings.json"), `{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}}`, 0o600)
	model, err := fakemodel.Start(
		fakemodel.Call("mcp_gemkit_gated_hello", map[string]any{}),
		fakemodel.Text("TURN1_DONE"),
		fakemodel.Call("run_shell_command", map[string]any{"command": "gemkit extensions consent gated --grant"}),
		fakemodel.Call("mcp_gemkit_gated_hello", map[string]any{}),
		fakemodel.Text("TURN2_DONE"),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	env := append(f.env(), "PATH="+bin+":"+os.Getenv("PATH"), "GOOGLE_GEMINI_BASE_URL="+model.URL, "GEMINI_API_KEY=test-key")

	setUp := geminiSetUp(t)
	add := exec.Command(filepath.Join(bin, setUp[0]), setUp[1:]...)
	add.Dir, add.Env = f.ws, env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(setUp, " "), err, out)
	}

	p := startGeminiPane(t, f, tmux, env)
	trustFolder(t, f, p)
	p.wait("Gemini CLI with gemkit connected", func(s string) bool {
		return strings.Contains(s, "Type your message") && strings.Contains(s, "1 MCP server")
	})
	refusedThenGranted(t, f, p, model)
	grantedInShellMode(t, f, p)
	p.kill()
	headlessTrusted(t, f, bin, env)
}

// pane is Gemini CLI's terminal interface in a tmux session of its own.
type pane struct {
	t          *testing.T
	tmux, sock string
}

// startGeminiPane starts gemini in the workspace in a tmux pane, with env
// exported.
func startGeminiPane(t *testing.T, f *fixture, tmux string, env []string) *pane {
	var script strings.Builder
	script.WriteString("cd '" + f.ws + "'\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.ContainsAny(k, " '") && !strings.Contains(v, "'") {
			script.WriteString("export " + k + "='" + v + "'\n")
		}
	}
	// A person's shell, not a CI job's: with CI=true or
	// GITHUB_ACTIONS=true Gemini CLI counts itself headless and refuses
	// an untrusted folder instead of asking (isHeadlessMode, exit 55), and
	// it restarts itself to apply folder trust only under its own
	// launcher, which it skips when SANDBOX or GEMINI_CLI_NO_RELAUNCH is
	// set (gemini.js, run()). If gemini ends, the pane keeps its last
	// words and exit status for the failure.
	script.WriteString("unset CI GITHUB_ACTIONS SANDBOX GEMINI_CLI_NO_RELAUNCH\n")
	script.WriteString("gemini; echo \"[gemini exited with status $?]\"; exec sleep 600\n")
	writeFile(t, filepath.Join(f.root, "gemini.sh"), script.String(), 0o755)
	p := &pane{t: t, tmux: tmux, sock: filepath.Join(f.root, "tmux.sock")}
	p.run("new-session", "-d", "-s", "g", "-x", "160", "-y", "60", filepath.Join(f.root, "gemini.sh"))
	t.Cleanup(p.kill)
	return p
}

// run runs a tmux command on the pane's server.
func (p *pane) run(args ...string) string {
	out, err := exec.Command(p.tmux, append([]string{"-S", p.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kill ends the tmux server, and gemini with it.
func (p *pane) kill() { exec.Command(p.tmux, "-S", p.sock, "kill-server").Run() }

func (p *pane) screen() string { return p.run("capture-pane", "-p", "-J", "-t", "g") }

// wait waits for a screen cond holds of, and fails at once if gemini
// ended meanwhile.
func (p *pane) wait(what string, cond func(string) bool) string {
	p.t.Helper()
	// The real Gemini CLI's screen in tmux changes with no event to
	// wait on.
	var s string
	if !gemkittest.Poll(2*time.Minute, 200*time.Millisecond, func() bool {
		s = p.screen()
		if cond(s) {
			return true
		}
		if strings.Contains(s, "[gemini exited with status") {
			p.t.Fatalf("gemini ended while waiting for %s; screen:\n%s", what, s)
		}
		return false
	}) {
		p.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
	}
	return s
}

// inputLine is the screen's input line: the last line starting with >
// (or !, in shell mode) above the footer.
func inputLine(scr string) string {
	lines := strings.Split(scr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "workspace (/directory)") {
			for j := i - 1; j >= 0; j-- {
				if l := strings.TrimSpace(lines[j]); strings.HasPrefix(l, ">") || strings.HasPrefix(l, "!") {
					return lines[j]
				}
			}
		}
	}
	return ""
}

// typeLine types s at the prompt, then Enter apart once s shows (sent
// together they read as a paste), and again until the input line lets
// go of s: on a loaded machine a key can come before the input takes it.
func (p *pane) typeLine(s string) {
	p.t.Helper()
	p.run("send-keys", "-t", "g", "-l", s)
	p.wait("the typed line", func(scr string) bool { return strings.Contains(inputLine(scr), s) })
	var sent time.Time
	p.wait("the line to be sent", func(scr string) bool {
		if !strings.Contains(inputLine(scr), s) {
			return true
		}
		if time.Since(sent) > 2*time.Second {
			p.run("send-keys", "-t", "g", "Enter")
			sent = time.Now()
		}
		return false
	})
}

// trustFolder answers Gemini CLI's folder-trust question with 1. Trust
// folder, and waits for it to restart trusted.
func trustFolder(t *testing.T, f *fixture, p *pane) {
	p.wait("the folder-trust question", func(s string) bool { return strings.Contains(s, "● 1. Trust folder") })
	// Gemini CLI restarts. The question is drawn before it takes keys:
	// give it a moment, and press Enter again only when it is still there.
	trust := time.Now()
	p.wait("Gemini CLI to restart trusted", func(s string) bool {
		if strings.Contains(s, "restarting to apply the trust changes") {
			return true
		}
		if strings.Contains(s, "● 1. Trust folder") && time.Since(trust) > 2*time.Second {
			p.run("send-keys", "-t", "g", "Enter")
			trust = time.Now()
		} else if strings.TrimSpace(s) == "" {
			// A blank screen is one between two of Gemini CLI's draws
			// (CI's command here caught one, with trustedFolders.json not
			// yet written): the next look tells.
			return false
		} else if !strings.Contains(s, "Do you trust") {
			// The restart's line may come and go between two looks at a
			// loaded machine's screen: the folder trusted says it came.
			b, _ := os.ReadFile(filepath.Join(f.home, ".gemini", "trustedFolders.json"))
			if strings.Contains(string(b), "TRUST_FOLDER") {
				return true
			}
			t.Fatalf("the trust question went without a restart; trustedFolders.json: %s\nscreen:\n%s", b, s)
		}
		return false
	})
}

// refusedThenGranted: a call without consent shows gemkit's refusal;
// the model's own grant is asked about by Gemini CLI, then waits for the
// person to type the name, recording nothing meanwhile; typed, the tool
// runs and its output reaches the model.
func refusedThenGranted(t *testing.T, f *fixture, p *pane, model *fakemodel.Server) {
	p.typeLine("say hello with the gated tool")
	p.wait("the end of the first turn", func(s string) bool { return strings.Contains(s, "TURN1_DONE") })
	s := p.screen()
	for _, want := range []string{"gated_hello (gemkit MCP Server)", "Not run: extension gated needs the person's consent before its tools run", "do not run", "that command yourself"} {
		if !strings.Contains(boxText(s), want) {
			t.Errorf("the refusal is not on screen (%q):\n%s", want, s)
		}
	}
	first, err := model.Turns()[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	if names := " " + strings.Join(first.FunctionNames(), " ") + " "; !strings.Contains(names, " mcp_gemkit_demo_count ") || !strings.Contains(names, " mcp_gemkit_gated_hello ") {
		t.Errorf("gemini did not offer gemkit's tools: %s", names)
	}

	p.typeLine("grant it yourself")
	p.wait("Gemini CLI's question before the shell command", func(s string) bool { return strings.Contains(s, "Allow execution of [Shell]?") })
	p.run("send-keys", "-t", "g", "Enter") // Allow once
	p.wait("gemkit's question", func(s string) bool {
		return strings.Contains(boxText(s), "Only you can agree: type gated and Enter") && strings.Contains(s, "awaiting input")
	})
	if consented(t, f) {
		t.Fatal("the model's command recorded consent before the person answered")
	}
	p.run("send-keys", "-t", "g", "Tab")
	p.wait("the shell focused", func(s string) bool { return strings.Contains(s, "Shift+Tab to unfocus") })
	p.run("send-keys", "-t", "g", "-l", "gated")
	p.wait("the name typed into the shell", func(s string) bool { return strings.Contains(s, "to refuse: gated") })
	p.run("send-keys", "-t", "g", "Enter")
	p.wait("the end of the second turn", func(s string) bool { return strings.Contains(s, "TURN2_DONE") })
	if !consented(t, f) {
		t.Fatal("the name typed by the person recorded no consent")
	}
	var out string
	for _, turn := range model.Turns() {
		g, _ := turn.Generate()
		for _, r := range g.FunctionResponses() {
			if r.Name == "mcp_gemkit_gated_hello" {
				b, _ := json.Marshal(r.Response)
				out = string(b)
			}
		}
	}
	if !strings.Contains(out, `hello\n`) {
		t.Errorf("the tool's output after consent did not reach the model: %s", out)
	}
}

// grantedInShellMode: the person's own way without leaving Gemini CLI,
// as docs/mcp.md gives it: ! and the command at its prompt, Tab, the
// name.
func grantedInShellMode(t *testing.T, f *fixture, p *pane) {
	if out, err := f.gemkit("extensions", "consent", "gated", "--revoke"); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	p.run("send-keys", "-t", "g", "-l", "!")
	p.wait("shell mode", func(s string) bool { return strings.Contains(s, "shell mode enabled") })
	p.typeLine("gemkit extensions consent gated --grant")
	p.wait("gemkit's question in shell mode", func(s string) bool {
		return strings.Contains(s, "Shell Command gemkit extensions consent gated --grant") && strings.Contains(s, "awaiting input")
	})
	p.run("send-keys", "-t", "g", "Tab")
	p.wait("the shell focused", func(s string) bool { return strings.Contains(s, "Shift+Tab to unfocus") })
	p.run("send-keys", "-t", "g", "-l", "gated")
	p.wait("the name typed into the shell", func(s string) bool { return strings.Count(s, "to refuse: gated") == 2 })
	p.run("send-keys", "-t", "g", "Enter")
	p.wait("the grant", func(s string) bool { return strings.Count(s, "Consent given to gated as it is now") == 2 })
	if !consented(t, f) {
		t.Fatal("the name typed in shell mode recorded no consent")
	}
}

// headlessTrusted: gemini -p in the folder now trusted offers the model
// gemkit's tools.
func headlessTrusted(t *testing.T, f *fixture, bin string, env []string) {
	headless, err := fakemodel.Start(fakemodel.Text("HEADLESS_DONE"))
	if err != nil {
		t.Fatal(err)
	}
	defer headless.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := exec.CommandContext(ctx, filepath.Join(bin, "gemini"), "-p", "which tools do you have?")
	p.Dir = f.ws
	p.Env = append(env, "GOOGLE_GEMINI_BASE_URL="+headless.URL)
	if out, err := p.CombinedOutput(); err != nil || !strings.Contains(string(out), "HEADLESS_DONE") {
		t.Fatalf("gemini -p: %v\n%s", err, out)
	}
	g, err := headless.Turns()[0].Generate()
	if err != nil {
		t.Fatal(err)
	}
	if names := " " + strings.Join(g.FunctionNames(), " ") + " "; !strings.Contains(names, " mcp_gemkit_demo_count ") || !strings.Contains(names, " mcp_gemkit_read_doc ") {
		t.Errorf("gemini -p did not offer gemkit's tools: %s", names)
	}
}

// boxText is the screen's words in one line, without the borders of
// Gemini CLI's boxes: a sentence that wraps inside a box reads whole.
func boxText(screen string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(screen, "│", " ")), " ")
}
