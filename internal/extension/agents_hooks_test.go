package extension

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/agentread"
)

// TestAgentServers: the servers of the agents Gemini CLI loads
// (agents/*.md but those starting with _), in the manifest's form
// (http_url as httpUrl), ${extensionPath} and ${workspacePath} replaced;
// a front matter that does not parse declares none.
func TestAgentServers(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		ManifestFile:       `{"name": "agented", "version": "1.0.0"}`,
		"agents/keeper.md": "---\nname: keeper\ndescription: Keeps notes\nmcp_servers:\n  notes:\n    command: node\n    args: [\"${extensionPath}/notes.js\", \"${workspacePath}\"]\n    env:\n      MODE: strict\n  far:\n    http_url: https://far.example.com/mcp\n---\nBody.\n",
		"agents/_draft.md": "---\nname: draft\ndescription: d\nmcp_servers:\n  x:\n    command: evil\n---\n",
		"agents/broken.md": "---\nname: [unclosed\n---\n",
		"agents/plain.md":  "---\nname: plain\ndescription: no servers\n---\n",
	}
	for n, b := range files {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(b), 0o644)
	}
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ext.AgentServers("/ws")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Agent != "keeper" || got[0].Server != "far" || got[1].Server != "notes" {
		t.Fatalf("agent servers: %+v", got)
	}
	if string(got[0].Def) != `{"httpUrl":"https://far.example.com/mcp"}` || !RemoteServer(got[0].Def) {
		t.Errorf("far: %s", got[0].Def)
	}
	if want := `{"args":["` + ext.Dir + `/notes.js","/ws"],"command":"node","env":{"MODE":"strict"}}`; string(got[1].Def) != want || !SandboxedServer(got[1].Def) {
		t.Errorf("notes: %s, want %s", got[1].Def, want)
	}
	if names := SwitchedAgentServers(got); strings.Join(names, ",") != "far,notes" {
		t.Errorf("switched names: %v", names)
	}
}

// TestCommandHooks: the command hooks Gemini CLI registers, in its
// order, labelled; and the string of hooksConfig.disabled that turns
// each off, or why none does for sure.
func TestCommandHooks(t *testing.T) {
	hooks, _, err := parseCommandHooks([]byte(`{"hooks": {
	  "SessionStart": [{"hooks": [{"type": "command", "name": "greet", "command": "echo hi"}]}],
	  "BeforeTool": [{"matcher": "write_file", "sequential": true, "hooks": [
	     {"type": "command", "command": "node ${extensionPath}/check.js", "timeout": 500},
	     {"type": "command", "command": "sh ${workspacePath}/x.sh"},
	     {"type": "command", "command": "curl -H \"$API\" ${TOKEN}"},
	     {"type": "runtime", "name": "skipped"},
	     {"type": "command", "name": "greet", "command": "echo twin"}]}],
	  "NotAnEvent": [{"hooks": [{"type": "command", "command": "x"}]}],
	  "disabled": ["x"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, h := range hooks {
		labels = append(labels, h.Event+":"+h.Label)
	}
	if got := strings.Join(labels, " "); got != "SessionStart:SessionStart-1 BeforeTool:BeforeTool-1 BeforeTool:BeforeTool-2 BeforeTool:BeforeTool-3 BeforeTool:BeforeTool-4" {
		t.Fatalf("labels: %s", got)
	}
	if h := hooks[1]; h.Matcher != "write_file" || !h.Sequential || h.Timeout != 500 {
		t.Errorf("BeforeTool-1: %+v", h)
	}
	settings := []Setting{{Name: "Token", EnvVar: "TOKEN"}}
	for i, want := range []struct{ key, why string }{
		{key: "greet"},
		{key: "node /ext/check.js"},
		{why: "${workspacePath}"},
		{why: "the setting ${TOKEN}"},
		{key: "greet"},
	} {
		key, why := hooks[i].DisableKey("/ext", settings)
		if key != want.key || want.why != "" && !strings.Contains(why, want.why) {
			t.Errorf("%s: key %q why %q, want %q %q", hooks[i].Label, key, why, want.key, want.why)
		}
	}
	dollar := CommandHook{Command: "echo $HOME"}
	if key, why := dollar.DisableKey("/ext", nil); key != "" || !strings.Contains(why, "$HOME") {
		t.Errorf("a command with $HOME: %q %q", key, why)
	}
}

// TestHookLinesUnswitchable is the newcomer tour's hook without a name
// whose command holds ${workspacePath}: the consent asked at link and
// install must not promise that the switch will run it in gemkit's
// sandbox, since no string of hooksConfig.disabled turns it off (doctor
// says it stays Gemini CLI's, unconfined); it says so, with why. A hook
// the switch can take keeps the promise.
func TestHookLinesUnswitchable(t *testing.T) {
	hooks, _, err := parseCommandHooks([]byte(`{"hooks": {"BeforeAgent": [{"hooks": [
	  {"type": "command", "command": "cat ${workspacePath}/README"},
	  {"type": "command", "name": "guard", "command": "sh ${workspacePath}/g.sh"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	lines := HookLines("hk", "/ext", nil, hooks, ServerChoice{})
	if len(lines) != 2 {
		t.Fatalf("lines: %q", lines)
	}
	if l := lines[0]; strings.Contains(l, "then gemkit runs it in its sandbox") || !strings.Contains(l, "the switch cannot take it") || !strings.Contains(l, "${workspacePath}") {
		t.Errorf("unswitchable hook: %s", l)
	}
	if l := lines[1]; !strings.Contains(l, "then gemkit runs it in its sandbox") {
		t.Errorf("named hook: %s", l)
	}
}

// TestDiscardedHooks is the newcomer tour's hooks file with a typo in an
// event's name and in a hook's type: Gemini CLI 0.61 skips both (the
// event with a warning at start, the hook in its debug log only), and
// gemkit neither lists nor switches them. DiscardedHooks names each,
// with why, so that doctor can tell the author; the fields Gemini CLI
// reads beside the events (enabled, disabled, notifications) and a
// well-formed hook are not among them.
func TestDiscardedHooks(t *testing.T) {
	_, got, _ := parseCommandHooks([]byte(`{"hooks": {
	  "BeforeTol": [{"hooks": [{"type": "command", "command": "x"}]}],
	  "disabled": ["y"],
	  "BeforeTool": [{"hooks": [
	    {"type": "comand", "command": "a"},
	    {"type": "command"},
	    {"type": "command", "command": "ok"},
	    {"type": "runtime", "name": "r"}]}]}}`))
	want := []string{
		`event "BeforeTol": not an event Gemini CLI knows`,
		`BeforeTool, hook 1: type "comand" is not command, plugin or runtime`,
		`BeforeTool, hook 2: a command hook without a command`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("discarded:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConsentTextUnreadableHooks: the consent asked at link and install
// of an extension whose hooks/hooks.json does not parse says so, rather
// than nothing: Gemini CLI runs none of its hooks, and the author reads
// this question first.
func TestConsentTextUnreadableHooks(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "hooks"), 0o755)
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"name": "hk", "version": "1.0.0"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "hooks", "hooks.json"), []byte(`{"hooks": {`), 0o644)
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(ConsentText(ext, "Linking"), "\n")
	if !strings.Contains(text, "Its hooks file cannot be read (JSON.parse refuses it at byte 11: expected a property name): Gemini CLI runs none of its hooks") {
		t.Errorf("consent text:\n%s", text)
	}
}

// TestHooksReadAsGeminiCLI: hooks/hooks.json read as Gemini CLI 0.61
// reads it (JSON.parse, HookRegistry, HookRunner, HookPlanner), by
// class: keys in other letters are other keys, the last duplicate wins,
// values are taken with JavaScript's types, and what gemkit cannot read
// so is unreadable (the switch then holds the extension).
func TestHooksReadAsGeminiCLI(t *testing.T) {
	one := func(hook string) string {
		return `{"hooks": {"SessionStart": [{"hooks": [` + hook + `]}]}}`
	}
	tests := []struct {
		name, file string
		// want is "" for no hook, else Type|Name|Command|Timeout|key.
		want       string
		unreadable bool
	}{
		{"a name in other letters", one(`{"type": "command", "name": "real", "command": "x", "Name": "decoy"}`), "command|real|x|0|real", false},
		{"a type in other letters", one(`{"type": "command", "name": "real", "command": "x", "Type": "plugin"}`), "command|real|x|0|real", false},
		{"the last duplicate", one(`{"type": "command", "name": "decoy", "command": "y", "name": "real", "command": "x"}`), "command|real|x|0|real", false},
		{"hooks in other letters", `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "x"}]}]}, "Hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "decoy"}]}]}}`, "command||x|0|x", false},
		{"a plugin hook runs its command", one(`{"type": "plugin", "name": "pl", "command": "x"}`), "plugin|pl|x|0|pl", false},
		{"a plugin hook without a name", one(`{"type": "plugin", "command": "x"}`), "plugin||x|0|unknown-hook", false},
		{"a plugin hook without a command", one(`{"type": "plugin", "name": "pl"}`), "", false},
		{"a runtime hook", one(`{"type": "runtime", "name": "rt", "command": "x"}`), "", false},
		{"a command that is a number", one(`{"type": "command", "command": 5}`), "", false},
		{"a timeout of digits", one(`{"type": "command", "command": "x", "timeout": "20000"}`), "command||x|20000|x", false},
		{"a timeout that is not a number", one(`{"type": "command", "command": "x", "timeout": "soon"}`), "command||x|1|x", false},
		{"a timeout of 0", one(`{"type": "command", "command": "x", "timeout": 0}`), "command||x|1|x", false},
		{"a timeout past 2^31", one(`{"type": "command", "command": "x", "timeout": 3000000000}`), "command||x|1|x", false},
		{"a timeout of null", one(`{"type": "command", "command": "x", "timeout": null}`), "command||x|0|x", false},
		{"a name that is a number", one(`{"type": "command", "name": 5, "command": "x"}`), "command||x|0|", false},
		{"a name that is empty", one(`{"type": "command", "name": "", "command": "x"}`), "command||x|0|x", false},
		{"an ignored key", `{"hooks": {"__proto__": [{"hooks": [{"type": "command", "command": "x"}]}]}}`, "", false},
		{"a name with variables", one(`{"type": "command", "name": "n-${extensionPath}-${constructor}", "command": "x"}`), "command|n-${extensionPath}-${constructor}|x|0|n-/ext-function Object() { [native code] }", false},
		{"a lone surrogate", one(`{"type": "command", "name": "a\ud800", "command": "x"}`), "", true},
		{"a matcher that is a number", `{"hooks": {"BeforeTool": [{"matcher": 5, "hooks": [{"type": "command", "command": "x"}]}]}}`, "", true},
		{"an env that is an array", one(`{"type": "command", "command": "x", "env": ["A=1"]}`), "", true},
		{"invalid UTF-8", one("{\"type\": \"command\", \"command\": \"x\xff\"}"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hooks, _, err := parseCommandHooks([]byte(tt.file))
			if got := agentread.IsUnreadable(err); got != tt.unreadable || err != nil && !got {
				t.Fatalf("err %v, want unreadable %v", err, tt.unreadable)
			}
			var got string
			if len(hooks) > 1 {
				t.Fatalf("%d hooks: %+v", len(hooks), hooks)
			}
			if len(hooks) == 1 {
				h := hooks[0]
				key, _ := h.DisableKey("/ext", nil)
				got = strings.Join([]string{h.Type, h.Name, h.Command, strconv.Itoa(h.Timeout), key}, "|")
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	env, _, err := parseCommandHooks([]byte(one(`{"type": "command", "command": "x", "env": {"N": 5, "B": true, "S": "s", "Z": null}, "sequential": "true"}`)))
	if err != nil || fmt.Sprint(env[0].Env) != "map[B:true N:5 S:s Z:null]" || env[0].Sequential {
		t.Errorf("env and sequential: %+v, %v", env, err)
	}
}

// TestAgentsReadAsGeminiCLI: agents/*.md read as agentLoader.ts reads
// them: a file of any size (gemkit skipped those past 1 MiB), the front
// matter ending at the first "\n---" whatever follows it, and a front
// matter gemkit cannot read as js-yaml does is unreadable when it could
// declare servers.
func TestAgentsReadAsGeminiCLI(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       string
		unreadable bool
	}{
		{"past 1 MiB", "---\nname: big\nmcp_servers:\n  s:\n    command: node\n---\n" + strings.Repeat("pad\n", 1<<19), "big/s", false},
		{"a front matter ending at ---x", "---\nname: a\n---x\nmcp_servers:\n  s:\n    command: node\n---\n", "", false},
		{"an anchor", "---\nname: a\nmcp_servers: &m\n  s:\n    command: node\n---\n", "", true},
		{"unreadable without servers", "---\nname: [unclosed\n---\n", "", false},
		{"unreadable with an escape", "---\n\"mcp\\x5fservers\": [unclosed\n---\n", "", true},
		{"an ignored server name", "---\nname: a\nmcp_servers:\n  constructor:\n    command: node\n  t:\n    command: node\n---\n", "a/t", false},
		{"the remote kind", "---\nname: a\nkind: remote\nmcp_servers:\n  s:\n    command: node\n---\n", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"name": "ag", "version": "1.0.0"}`), 0o644)
			os.WriteFile(filepath.Join(dir, "agents", "a.md"), []byte(tt.body), 0o644)
			ext, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			servers, err := ext.AgentServers("/ws")
			if agentread.IsUnreadable(err) != tt.unreadable || err != nil && !tt.unreadable {
				t.Fatalf("err %v, want unreadable %v", err, tt.unreadable)
			}
			var got []string
			for _, s := range servers {
				got = append(got, s.Agent+"/"+s.Server)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("servers %v, want %q", got, tt.want)
			}
		})
	}
}
