package ide

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAgentFolder: each agent's folder where its home variable puts it,
// as the agent itself resolves it: absolute as is, relative from the
// working folder, ~ only where the agent expands it, GEMINI_CLI_HOME as
// the folder that holds .gemini.
func TestAgentFolder(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		agent     Agent
		value     string
		home, dir string
		want      string
	}{
		{"gemini default", AgentGemini, "", "/home/u", "", "/home/u/.gemini"},
		{"gemini moved", AgentGemini, "/srv/g", "/home/u", "", "/srv/g/.gemini"},
		{"gemini relative", AgentGemini, "g", "/home/u", "/w", "/w/g/.gemini"},
		{"claude default", AgentClaude, "", "/home/u", "", "/home/u/.claude"},
		{"claude moved", AgentClaude, "/srv/c", "/home/u", "", "/srv/c"},
		{"claude relative", AgentClaude, "c", "/home/u", "/w", "/w/c"},
		{"claude keeps ~", AgentClaude, "~/c", "/home/u", "/w", "/w/~/c"},
		{"qwen default", AgentQwen, "", "/home/u", "", "/home/u/.qwen"},
		{"qwen moved", AgentQwen, "/srv/q/", "/home/u", "", "/srv/q"},
		{"qwen under ~", AgentQwen, "~/q", "/home/u", "", "/home/u/q"},
		{"qwen is ~", AgentQwen, "~", "/home/u", "", "/home/u"},
		{"qwen relative", AgentQwen, "q", "/home/u", "/w", "/w/q"},
		{"qwen relative, this process", AgentQwen, "q", "/home/u", "", filepath.Join(wd, "q")},
		{"no home", AgentQwen, "", "", "", ""},
		{"no folder", AgentLLxprt, "", "/home/u", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{tc.agent.HomeEnv: tc.value}
			if got := tc.agent.Folder(func(k string) string { return env[k] }, tc.home, tc.dir); got != tc.want {
				t.Errorf("Folder = %q, want %q", got, tc.want)
			}
		})
	}
	if got := AgentQwen.LockFolder(func(string) string { return "q" }, "/home/u", "/w"); got != "/w/q/ide" {
		t.Errorf("LockFolder = %q", got)
	}
	if got := AgentGemini.LockFolder(nil, "/home/u", ""); got != "" {
		t.Errorf("Gemini CLI has no lock folder, got %q", got)
	}
}

// TestAgentOfCommand: a client's command line names its agent by a
// script in the agent's npm package or by its command.
func TestAgentOfCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "/usr/lib/node_modules/@qwen-code/qwen-code/cli.js"}, "Qwen Code"},
		{[]string{"/usr/local/bin/qwen"}, "Qwen Code"},
		{[]string{"node", "/opt/@google/gemini-cli/bundle/gemini.js"}, "Gemini CLI"},
		{[]string{"llxprt", "--ide"}, "LLxprt Code"},
		{[]string{"claude"}, "Claude Code"},
		{[]string{"node", "server.js"}, ""},
		{nil, ""},
	} {
		a, _, ok := AgentOfCommand(tc.args)
		if a.Name != tc.want || ok != (tc.want != "") {
			t.Errorf("AgentOfCommand(%q) = %q, %v; want %q", tc.args, a.Name, ok, tc.want)
		}
	}
}
