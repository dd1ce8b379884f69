package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// compatShapes are the extension shapes of the compatibility set: what
// published extensions use that both tools must list alike.
var compatShapes = map[string]map[string]string{
	"skills-hooks": {
		"gemini-extension.json":  `{"name": "skills-hooks", "version": "1.0.0", "description": "Skills, agents and hooks"}`,
		"GEMINI.md":              "Use the review skill.\n",
		"skills/review/SKILL.md": "---\nname: review\ndescription: Reviews a change for bugs\n---\nRead the diff.\n",
		"skills/plan/SKILL.md":   "---\nname: \"plan\"\ndescription: >\n  Plans the work\n  step by step\n---\nPlan.\n",
		"agents/helper.md":       "---\nname: helper\ndescription: Answers questions about the code\n---\nYou help.\n",
		"hooks/hooks.json":       `{"hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "${extensionPath}${/}hooks${/}check.sh"}]}]}}`,
	},
	"settings-env": {
		"gemini-extension.json": `{"name": "settings-env", "version": "2.1.0", "settings": [
			{"name": "API key", "description": "Key for the service", "envVar": "SETTINGS_ENV_KEY"},
			{"name": "Region", "description": "Where it runs", "envVar": "SETTINGS_ENV_REGION"}]}`,
	},
	"remote-mcp": {
		"gemini-extension.json": `{"name": "remote-mcp", "version": "0.4.0", "mcpServers": {
			"streamable": {"httpUrl": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer $TOKEN"}},
			"sse": {"url": "https://mcp.example.com/sse"}}}`,
	},
	"exclude-tools": {
		"gemini-extension.json": `{"name": "exclude-tools", "version": "1.0.0", "excludeTools": ["run_shell_command(rm -rf)", "web_fetch"], "contextFileName": ["RULES.md", "MISSING.md"]}`,
		"RULES.md":              "Never delete.\n",
	},
	"night-themes": {
		"gemini-extension.json": `{"name": "night-themes", "version": "1.0.0", "themes": [
			{"name": "night-owl", "type": "custom", "background": {"primary": "#011627"}, "text": {"primary": "#d6deeb"}}]}`,
	},
	"linked-by-gemini": {
		"gemini-extension.json": `{"name": "linked-by-gemini", "version": "0.0.1", "contextFileName": "CONTEXT.md"}`,
		"CONTEXT.md":            "Context.\n",
	},
}

// compatHome is one private home shared by the real Gemini CLI and
// gemkit. The Gemini CLI runs offline: in its own network namespace (no
// interface up, so nothing can leave the machine), with an API key and
// settings that skip every sign-in and trust question.
type compatHome struct {
	t        *testing.T
	home, ws string
	node     string
	gemini   string
	gemkit   string
	unshare  string
}

func newCompatHome(t *testing.T) *compatHome {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	h := &compatHome{t: t, home: t.TempDir(), node: node,
		gemini:  filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"),
		gemkit:  gemkittest.Gemkit(t),
		unshare: gemkittest.Tool(t, "unshare", "util-linux")}
	h.ws = filepath.Join(h.home, "work")
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
		"general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`
	writeFiles(t, filepath.Join(h.home, ".gemini"), map[string]string{"settings.json": settings})
	writeFiles(t, h.ws, map[string]string{"README": "workspace\n"})
	for name, files := range compatShapes {
		writeFiles(t, h.src(name), files)
	}
	return h
}

func (h *compatHome) src(name string) string { return filepath.Join(h.home, "src", name) }

func (h *compatHome) env() []string {
	return []string{"HOME=" + h.home, "GEMINI_CLI_HOME=" + h.home, "GEMINI_API_KEY=x", "PATH=" + os.Getenv("PATH"),
		"NO_COLOR=1", "TERM=dumb", "GIT_TERMINAL_PROMPT=0"}
}

// run runs a command in the workspace and returns stdout, stderr and the
// exit code.
func (h *compatHome) run(name string, args ...string) (string, string, int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = h.ws, h.env(), strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("%s %v: %v", name, args, err)
	}
	return out.String(), errb.String(), code
}

// gem runs a command of the real Gemini CLI, offline. With
// GEMINI_CLI_NO_RELAUNCH it runs the command in its first process: its
// launcher (bundle/gemini.js, run()) otherwise loads the whole bundle
// only to start a second node, with this very variable set
// (getSpawnConfig) and a larger heap, which loads it again and runs the
// command. The command's code is the same either way; the launcher took
// 45% of each command's CPU (`gemini extensions list`: 3.3 s against
// 1.8 s), and these tests run some 30 of them.
func (h *compatHome) gem(args ...string) (string, string, int) {
	h.t.Helper()
	return h.run(h.unshare, append([]string{"--user", "--map-root-user", "--net", "env", "GEMINI_CLI_NO_RELAUNCH=true", h.node, h.gemini}, args...)...)
}

func (h *compatHome) kit(args ...string) (string, string, int) {
	h.t.Helper()
	return h.run(h.gemkit, append([]string{"extensions"}, args...)...)
}

func (h *compatHome) mustGem(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.gem(args...)
	if code != 0 {
		h.t.Fatalf("gemini %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func (h *compatHome) mustKit(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.kit(args...)
	if code != 0 {
		h.t.Fatalf("gemkit extensions %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// lists returns both tools' lists, by extension name.
func (h *compatHome) lists() (gem, kit map[string]map[string]any) {
	h.t.Helper()
	// Gemini CLI 0.61 writes the list to stderr (its console output),
	// after any warnings, some of which start with "[" too
	// ("[ExtensionManager] Invalid plan.directory ..."): the list is
	// from the first line that is "[" (or "[]").
	out, errOut, code := h.gem("extensions", "list", "-o", "json")
	all := out + errOut
	start, at := -1, 0
	for line := range strings.Lines(all) {
		if l := strings.TrimSpace(line); l == "[" || l == "[]" {
			start = at
			break
		}
		at += len(line)
	}
	if code != 0 || start < 0 {
		h.t.Fatalf("gemini extensions list -o json: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var list json.RawMessage
	if err := json.NewDecoder(strings.NewReader(all[start:])).Decode(&list); err != nil {
		h.t.Fatalf("gemini extensions list -o json: %v\n%s", err, all)
	}
	return byName(h.t, "gemini", string(list)), byName(h.t, "gemkit", h.mustKit("list", "--json"))
}

func byName(t *testing.T, who, out string) map[string]map[string]any {
	t.Helper()
	var items []map[string]any
	if err := json.Unmarshal([]byte(out), &items); err != nil {
		t.Fatalf("%s list is not a JSON list: %v\n%s", who, err, out)
	}
	m := map[string]map[string]any{}
	for _, it := range items {
		m[it["name"].(string)] = it
	}
	return m
}

// compareLists checks the two lists field by field where both tools have
// the field (under its name or, where gemkit names it otherwise, its
// counterpart), and that both hold exactly want.
func compareLists(t *testing.T, gem, kit map[string]map[string]any, want ...string) {
	t.Helper()
	if len(gem) != len(want) || len(kit) != len(want) {
		t.Errorf("gemini lists %v, gemkit %v; want %v", keys(gem), keys(kit), want)
	}
	for _, name := range want {
		g, k := gem[name], kit[name]
		if g == nil || k == nil {
			t.Errorf("%s: listed by gemini %v, by gemkit %v", name, g != nil, k != nil)
			continue
		}
		same := func(field string, gv, kv any) {
			t.Helper()
			if !reflect.DeepEqual(gv, kv) {
				t.Errorf("%s: %s: gemini %s, gemkit %s", name, field, show(gv), show(kv))
			}
		}
		for _, f := range []string{"version", "path", "id"} {
			same(f, g[f], k[f])
		}
		same("contextFiles", orEmpty(g["contextFiles"]), orEmpty(k["contextFiles"]))
		same("excludeTools", orEmpty(g["excludeTools"]), orEmpty(k["excludeTools"]))
		md, _ := g["installMetadata"].(map[string]any)
		src, _ := k["source"].(map[string]any)
		same("installMetadata.type", md["type"], src["type"])
		same("installMetadata.source", md["source"], src["source"])
		same("isActive / enabled.workspace", g["isActive"], k["enabled"].(map[string]any)["workspace"])
		servers, _ := g["mcpServers"].(map[string]any)
		same("mcpServers", sortedAny(servers), orEmpty(k["mcpServers"]))
		same("themes", pick(g["themes"], "name"), orEmpty(k["themes"]))
		// Gemini CLI lists skills in the order its glob finds them,
		// gemkit by file.
		same("skills", sortedBy(pickAll(g["skills"], "name", "description", "location"), "location"), pickAll(k["skills"], "name", "description", "location"))
		same("agents", pickAll(g["agents"], "name", "description"), pickAll(k["agents"], "name", "description"))
		same("agents files", pickPath(g["agents"], "metadata", "filePath"), pick(k["agents"], "file"))
		same("hooks", withoutHookEnv(g["hooks"]), k["hooks"])
		gs, _ := g["settings"].([]any)
		for _, s := range gs {
			if s.(map[string]any)["sensitive"] == nil {
				s.(map[string]any)["sensitive"] = false
			}
		}
		same("settings", pickAll(gs, "name", "description", "envVar", "sensitive"), pickAll(k["settings"], "name", "description", "envVar", "sensitive"))
		same("resolvedSettings scope and source", pickAll(g["resolvedSettings"], "scope", "source"), pickAll(k["settings"], "scope", "source"))
		for _, s := range asList(g["resolvedSettings"]) {
			if _, hasValue := s.(map[string]any)["value"]; hasValue {
				for _, ks := range asList(k["settings"]) {
					if ks.(map[string]any)["envVar"] == s.(map[string]any)["envVar"] && ks.(map[string]any)["set"] != true {
						t.Errorf("%s: gemini has a value for %v, gemkit says set=%v", name, ks.(map[string]any)["envVar"], ks.(map[string]any)["set"])
					}
				}
			}
		}
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func sortedAny(m map[string]any) []any {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	out := []any{}
	for _, k := range sortedStrings(ks) {
		out = append(out, k)
	}
	return out
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func orEmpty(v any) []any {
	if l := asList(v); l != nil {
		return l
	}
	return []any{}
}

func pick(v any, field string) []any {
	out := []any{}
	for _, e := range asList(v) {
		out = append(out, e.(map[string]any)[field])
	}
	return out
}

func pickPath(v any, fields ...string) []any {
	out := []any{}
	for _, e := range asList(v) {
		var cur any = e
		for _, f := range fields {
			cur = cur.(map[string]any)[f]
		}
		out = append(out, cur)
	}
	return out
}

func sortedBy(l []any, field string) []any {
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j].(map[string]any)[field].(string) < l[i].(map[string]any)[field].(string) {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return l
}

func pickAll(v any, fields ...string) []any {
	out := []any{}
	for _, e := range asList(v) {
		m := map[string]any{}
		for _, f := range fields {
			if x, ok := e.(map[string]any)[f]; ok {
				m[f] = x
			}
		}
		out = append(out, m)
	}
	return out
}

// withoutHookEnv drops the "env" Gemini CLI adds to each command hook:
// the extension's setting values, which gemkit never prints.
func withoutHookEnv(v any) any {
	events, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, defs := range events {
		for _, d := range asList(defs) {
			for _, hk := range asList(d.(map[string]any)["hooks"]) {
				delete(hk.(map[string]any), "env")
			}
		}
	}
	return events
}

// TestGeminiCLICompatibility installs, links, enables, disables and
// removes the compatibility shapes with gemkit and with the real Gemini
// CLI 0.61.0 on one home, and checks after each round that both list the
// same extensions the same way; then a duplicate name, which both must
// refuse, and a killed install, which Gemini CLI must not see and the
// next gemkit command must clean up.
func TestGeminiCLICompatibility(t *testing.T) {
	t.Parallel()
	h := newCompatHome(t)

	// gemkit installs and links; Gemini CLI installs and links.
	for _, name := range []string{"skills-hooks", "settings-env", "remote-mcp"} {
		h.mustKit("install", h.src(name), "--consent")
	}
	h.mustKit("link", h.src("exclude-tools"), "--consent")
	h.mustGem("extensions", "install", h.src("night-themes"), "--consent", "--skip-settings")
	h.mustGem("extensions", "link", h.src("linked-by-gemini"), "--consent")
	writeFiles(t, filepath.Join(h.home, ".gemini", "extensions", "settings-env"), map[string]string{".env": "SETTINGS_ENV_KEY=secret-value\n"})
	// Each disables one the other installed.
	h.mustKit("disable", "night-themes")
	h.mustGem("extensions", "disable", "remote-mcp")
	all := []string{"exclude-tools", "linked-by-gemini", "night-themes", "remote-mcp", "settings-env", "skills-hooks"}
	gem, kit := h.lists()
	compareLists(t, gem, kit, all...)
	if gem["night-themes"]["isActive"] != false || gem["remote-mcp"]["isActive"] != false {
		t.Errorf("disabling did not reach Gemini CLI: %v %v", gem["night-themes"]["isActive"], gem["remote-mcp"]["isActive"])
	}
	if strings.Contains(h.mustKit("list", "--json"), "secret-value") || strings.Contains(h.mustKit("describe", "settings-env"), "secret-value") {
		t.Error("gemkit printed a setting's value")
	}

	// Each enables and removes what the other installed.
	h.mustGem("extensions", "enable", "night-themes")
	h.mustKit("enable", "remote-mcp")
	h.mustGem("extensions", "uninstall", "skills-hooks")
	h.mustKit("uninstall", "linked-by-gemini")
	all = []string{"exclude-tools", "night-themes", "remote-mcp", "settings-env"}
	gem, kit = h.lists()
	compareLists(t, gem, kit, all...)
	if gem["night-themes"]["isActive"] != true || kit["remote-mcp"]["enabled"].(map[string]any)["workspace"] != true {
		t.Error("enabling did not reach the other tool")
	}

	// A copied folder: two extensions called settings-env.
	copyTree(t, filepath.Join(h.home, ".gemini", "extensions", "settings-env"), filepath.Join(h.home, ".gemini", "extensions", "settings-env-copy"))
	gout, gerr, gcode := h.gem("extensions", "list", "-o", "json")
	if gcode == 0 || !strings.Contains(gout+gerr, "already was loaded") {
		t.Errorf("gemini with a duplicate name: exit %d\n%s%s", gcode, gout, gerr)
	}
	kout, _, kcode := h.kit("list")
	if kcode != ExitNo || !strings.Contains(kout, "gemkit extensions uninstall settings-env-copy") {
		t.Errorf("gemkit list with a duplicate name: exit %d\n%s", kcode, kout)
	}
	if _, _, code := h.kit("describe", "settings-env"); code != ExitNo {
		t.Errorf("describe of a duplicated name: exit %d, want %d", code, ExitNo)
	}
	vout, _, vcode := h.kit("validate", filepath.Join(h.home, ".gemini", "extensions", "settings-env-copy"))
	if vcode != ExitNo || !strings.Contains(vout, "already was loaded") {
		t.Errorf("validate of a duplicate: exit %d\n%s", vcode, vout)
	}
	h.mustKit("uninstall", "settings-env-copy") // the fix gemkit gives
	gem, kit = h.lists()
	compareLists(t, gem, kit, all...)
	if s := asList(kit["settings-env"]["settings"]); len(s) == 0 || s[0].(map[string]any)["set"] != true {
		t.Errorf("removing the copy lost the original's settings: %v", s)
	}

	compatKilledInstall(t, h, all)
	compatFileInstalls(t, h, all)
}

// compatKilledInstall: an install killed with its staging folder in
// place, and a leftover of an earlier gemkit that staged in the
// extensions folder, are cleaned up by the next gemkit command; Gemini
// CLI warns of the old leftover only until then, and lists what gemkit
// lists, all.
func compatKilledInstall(t *testing.T, h *compatHome, all []string) {
	// git waits on a loopback server that never answers, then gemkit is
	// SIGKILLed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	cmd := exec.Command(h.gemkit, "extensions", "install", "git://"+ln.Addr().String()+"/never.git", "--consent")
	cmd.Dir, cmd.Env = h.ws, h.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	staging := filepath.Join(h.home, ".gemini", "gemkit", "staging")
	// The real install makes its staging folder on its own time.
	if !gemkittest.Poll(time.Minute, 20*time.Millisecond, func() bool {
		ents, _ := os.ReadDir(staging)
		return len(ents) > 0
	}) {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatal("the install never created its staging folder")
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	// A leftover of an earlier gemkit, which staged in the extensions
	// folder.
	old := filepath.Join(h.home, ".gemini", "extensions", ".gemkit-install-1234567")
	writeFiles(t, old, map[string]string{"clone/README": "half a clone\n"})
	long := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(old, long, long))
	if _, gerr, _ := h.gem("extensions", "list"); !strings.Contains(gerr, "Skipping extension in "+old) || strings.Count(gerr, "Skipping extension") != 1 {
		t.Errorf("gemini should warn about the old leftover only, not the killed install's staging folder:\n%s", gerr)
	}
	h.mustKit("list")
	if ents, _ := os.ReadDir(staging); len(ents) != 0 {
		t.Errorf("the next gemkit command left the killed install's staging folder: %v", ents)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old leftover is still there: %v", err)
	}
	if _, gerr, _ := h.gem("extensions", "list"); strings.Contains(gerr, "Skipping extension") {
		t.Errorf("gemini still warns after gemkit's clean-up:\n%s", gerr)
	}
	gem, kit := h.lists()
	compareLists(t, gem, kit, all...)
}

// compatFileInstalls: installs of a file:// repository by gemkit, whole
// and with --path, as Gemini CLI updates (or cannot update) them, beside
// the extensions all already installed.
func compatFileInstalls(t *testing.T, h *compatHome, all []string) {
	// A file:// git install by gemkit: Gemini CLI updates it (the clone
	// keeps its .git) but refuses to install such a source itself.
	repo := filepath.Join(h.home, "repo")
	writeFiles(t, repo, map[string]string{"gemini-extension.json": `{"name": "via-file", "version": "1.0.0"}`})
	gemkittest.Git(t, repo, "init", "--quiet")
	gemkittest.Git(t, repo, "add", ".")
	gemkittest.Git(t, repo, "commit", "--quiet", "-m", "one")
	h.mustKit("install", "file://"+repo, "--consent")
	writeFiles(t, repo, map[string]string{"gemini-extension.json": `{"name": "via-file", "version": "1.1.0"}`})
	gemkittest.Git(t, repo, "commit", "--quiet", "-am", "two")
	if out, errOut, code := h.gem("extensions", "update", "via-file"); code != 0 || !strings.Contains(out+errOut, "1.0.0 → 1.1.0") {
		t.Errorf("gemini extensions update of a file:// install: exit %d\n%s%s", code, out, errOut)
	}
	all = append(all, "via-file")
	gem, kit := h.lists()
	compareLists(t, gem, kit, all...)
	if kit["via-file"]["version"] != "1.1.0" {
		t.Errorf("gemkit lists via-file at %v after Gemini CLI's update", kit["via-file"]["version"])
	}
	h.mustKit("uninstall", "via-file")

	// A --path install: Gemini CLI's update cannot see a repository in
	// the folder ("not a git repository") and calls it up to date; gemkit
	// says only it updates it, and does.
	writeFiles(t, repo, map[string]string{"sub/gemini-extension.json": `{"name": "sub-ext", "version": "1.0.0"}`})
	gemkittest.Git(t, repo, "add", ".")
	gemkittest.Git(t, repo, "commit", "--quiet", "-m", "sub")
	h.mustKit("install", "file://"+repo, "--path", "sub", "--consent")
	writeFiles(t, repo, map[string]string{"sub/gemini-extension.json": `{"name": "sub-ext", "version": "2.0.0"}`})
	gemkittest.Git(t, repo, "commit", "--quiet", "-am", "sub two")
	if out, errOut, _ := h.gem("extensions", "update", "sub-ext"); !strings.Contains(out+errOut, "not a git repository") {
		t.Errorf("gemini extensions update of a --path install:\n%s%s", out, errOut)
	}
	if out := h.mustKit("list"); !strings.Contains(out, "note: sub-ext: only gemkit updates it") {
		t.Errorf("list does not say who updates sub-ext:\n%s", out)
	}
	all[len(all)-1] = "sub-ext"
	gem, kit = h.lists()
	compareLists(t, gem, kit, all...)
	if gem["sub-ext"]["version"] != "1.0.0" {
		t.Errorf("Gemini CLI updated a --path install after all: %v", gem["sub-ext"]["version"])
	}
	h.mustKit("update", "sub-ext", "--consent")
	gem, kit = h.lists()
	compareLists(t, gem, kit, all...)
	if gem["sub-ext"]["version"] != "2.0.0" {
		t.Errorf("after gemkit's update Gemini CLI lists sub-ext at %v", gem["sub-ext"]["version"])
	}
	if out, errOut, code := h.gem("extensions", "install", "file://"+repo, "--consent"); code == 0 || !strings.Contains(out+errOut, "Install source not found") {
		t.Errorf("gemini extensions install file://: exit %d\n%s%s", code, out, errOut)
	}
}
