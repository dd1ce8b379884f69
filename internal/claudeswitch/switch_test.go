package claudeswitch

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/claudeplugin"
)

// fixture is a switch in a temporary home, and a plugin to switch.
type fixture struct {
	s    *Switch
	home string
	p    *claudeplugin.Plugin
}

func newFixture(t *testing.T, settings string) *fixture {
	t.Helper()
	home := t.TempDir()
	claude := filepath.Join(home, ".claude")
	if settings != "" {
		writeCase(t, claude, "settings.json", settings, false)
	}
	root := filepath.Join(home, "mkt", "notes")
	writeCase(t, root, ".mcp.json", `{"mcpServers": {"srv": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/s.js"]}}}`, false)
	writeCase(t, root, "s.js", "1\n", false)
	writeCase(t, claude, "plugins/installed_plugins.json", `{"version": 2, "plugins": {"notes@mk": [{"scope": "user", "installPath": "`+root+`", "version": "1"}]}}`, false)
	p := &claudeplugin.Plugin{ID: "notes@mk", Name: "notes", Marketplace: "mk", Root: root,
		Enabled: []claudeplugin.Scope{{Scope: "user", File: filepath.Join(claude, "settings.json"), Enabled: true}}}
	return &fixture{s: New(home, claude, "/bin/gemkit"), home: home, p: p}
}

// on switches f's plugin p, as the command does once the person agreed.
func (f *fixture) on(t *testing.T, p *claudeplugin.Plugin) {
	t.Helper()
	plan, err := f.s.Prepare(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Enable(plan); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) settings(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(f.s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOffRestoresBytes: the switch off gives back Claude Code's user
// settings byte for byte (their spacing, key order and escapes, or
// their absence) when the person has not changed them since; two
// switches undone in the other order give back the first's too.
func TestOffRestoresBytes(t *testing.T) {
	for _, before := range []string{
		"",
		"{\n    \"model\": \"opus\",   \"enabledPlugins\": {\"notes@mk\": true, \"x@y\": false},\n\"deniedMcpServers\": [{\"serverName\": \"plugin:notes:srv\"}], \"k\": \"\\u00e9\"}",
		`{"enabledPlugins":{"notes@mk":true}}`,
	} {
		f := newFixture(t, before)
		f.on(t, f.p)
		var v struct {
			Enabled map[string]bool                      `json:"enabledPlugins"`
			Denied  []map[string]string                  `json:"deniedMcpServers"`
			Markets map[string]map[string]map[string]any `json:"extraKnownMarketplaces"`
		}
		if err := json.Unmarshal(f.settings(t), &v); err != nil {
			t.Fatal(err)
		}
		if v.Enabled["notes@mk"] || !v.Enabled["notes@gemkit-sandbox"] || len(v.Denied) != 1 || v.Denied[0]["serverName"] != "plugin:notes:srv" ||
			v.Markets[Marketplace]["source"]["path"] != f.s.Market {
			t.Errorf("the switch wrote:\n%s", f.settings(t))
		}
		off, err := f.s.Disable("notes@mk")
		if err != nil || !off.Restored {
			t.Fatalf("Disable: %+v, %v", off, err)
		}
		after, err := os.ReadFile(f.s.Settings)
		if before == "" {
			if !os.IsNotExist(err) {
				t.Errorf("the settings gemkit made stay: %s", after)
			}
			continue
		}
		if string(after) != before {
			t.Errorf("after the switch off:\n%s\nwant byte for byte:\n%s", after, before)
		}
		if _, err := os.Stat(f.s.TwinPlugin("notes")); !os.IsNotExist(err) {
			t.Errorf("the twin plugin stays: %v", err)
		}
	}
}

// TestOffAfterPersonEdits: settings the person changed since the switch
// lose only gemkit's edits: their change stays, the plugin's
// enablement is as it was, the twin, the denial and gemkit's
// marketplace are gone; the marketplace stays while another plugin is
// switched.
func TestOffAfterPersonEdits(t *testing.T) {
	f := newFixture(t, `{"enabledPlugins": {"notes@mk": true}}`)
	other := *f.p
	other.ID, other.Name = "other@mk", "other"
	f.on(t, f.p)
	f.on(t, &other)
	edited := bytes.Replace(f.settings(t), []byte("{"), []byte("{\n  \"theme\": \"dark\","), 1)
	if err := os.WriteFile(f.s.Settings, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	off, err := f.s.Disable("notes@mk")
	if err != nil || !off.Structural {
		t.Fatalf("Disable: %+v, %v", off, err)
	}
	got := string(f.settings(t))
	for _, want := range []string{`"theme": "dark"`, `"notes@mk": true`, `"other@gemkit-sandbox": true`, `"plugin:other:srv"`, `"gemkit-sandbox": {`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in:\n%s", want, got)
		}
	}
	for _, gone := range []string{`notes@gemkit-sandbox`, `plugin:notes:srv`} {
		if strings.Contains(got, gone) {
			t.Errorf("%s stays in:\n%s", gone, got)
		}
	}
	if _, err := f.s.Disable("other@mk"); err != nil {
		t.Fatal(err)
	}
	if got := string(f.settings(t)); strings.Contains(got, "gemkit-sandbox") || !strings.Contains(got, `"theme": "dark"`) {
		t.Errorf("after both are off:\n%s", got)
	}
}

// TestPrepareRefuses: before anything is agreed to, Claude Code's user
// settings that cannot take the switch's edit (not JSON as it reads it,
// enabledPlugins not an object), a plugin a project's settings enable
// (user settings cannot turn it off there), one whose settings there
// cannot be read, one whose twin name another plugin's twin has, and one gemkit
// could read differently from Claude Code are refused, naming why.
func TestPrepareRefuses(t *testing.T) {
	f := newFixture(t, "")
	project := *f.p
	project.Enabled = append(project.Enabled, claudeplugin.Scope{Scope: "project", File: "/w/.claude/settings.json", Enabled: true})
	unknown := *f.p
	unknown.Enabled = append(unknown.Enabled, claudeplugin.Scope{Scope: "local", File: "/w/.claude/settings.local.json", Unreadable: true})
	unreadable := *f.p
	unreadable.Unreadable = "x.json: JSON.parse refuses it"
	f.on(t, f.p)
	twin := *f.p
	twin.ID, twin.Name, twin.Marketplace = "notes@m-k", "notes", "m-k"
	clash := *f.p
	clash.ID, clash.Marketplace = "notes@m_k", "m_k"
	f.on(t, &twin)
	good := f.settings(t)
	for _, c := range []struct {
		p              *claudeplugin.Plugin
		settings, want string
	}{
		{f.p, `{"enabledPlugins": {},}`, "cannot be read as Claude Code reads it"},
		{f.p, `{"enabledPlugins": []}`, "enabledPlugins is not an object"},
		{&project, "", "enabled in /w/.claude/settings.json (project scope), which Claude Code's user settings cannot turn off"},
		{&unknown, "", "/w/.claude/settings.local.json (local scope)"},
		{&unreadable, "", "is not read as Claude Code reads it"},
		{&clash, "", "notes@m_k and notes@m-k both make the twin name notes-m-k"},
	} {
		writeCase(t, filepath.Dir(f.s.Settings), "settings.json", cmpStr(c.settings, string(good)), false)
		if _, err := f.s.Prepare(c.p, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Prepare(%s): %v, want %q", c.p.ID, err, c.want)
		}
	}
}

// TestHeldOnChange: once the plugin's files change after the switch
// (Claude Code updated it, or its directory marketplace was edited in
// place), its twin is held, and the words say what changed and how to
// agree again; gemkit mcp --only asks the same (Held).
func TestHeldOnChange(t *testing.T) {
	f := newFixture(t, "")
	f.on(t, f.p)
	recs, err := f.s.ReadRecords()
	if err != nil {
		t.Fatal(err)
	}
	if st := f.s.StatusOf(recs, f.p); !st.Switched || st.Held != "" || st.Runs() != "in gemkit's sandbox" {
		t.Errorf("switched: %+v", st)
	}
	writeCase(t, f.p.Root, "s.js", "2\n", false)
	writeCase(t, f.p.Root, "new.js", "3\n", false)
	if err := os.Remove(filepath.Join(f.p.Root, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	want := "the plugin changed since you agreed (added new.js; removed .mcp.json; changed s.js)"
	if st := f.s.StatusOf(recs, f.p); !strings.HasPrefix(st.Held, want) || !strings.Contains(st.Runs(), "held: ") || !strings.Contains(st.Held, "gemkit plugins sandbox notes@mk") {
		t.Errorf("changed: %+v, want held: %s", st, want)
	}
	if why := Held(f.s.Home, "notes-mk"); !strings.HasPrefix(why, want) {
		t.Errorf("Held: %q", why)
	}
	if why := Held(f.s.Home, "another"); why != "" {
		t.Errorf("Held of no twin: %q", why)
	}
}

// TestHeldOnUpdateElsewhere: an update Claude Code installs in a new
// folder (claude plugin update puts each version apart in its cache),
// the old one left as it was, holds the twin all the same, saying where
// Claude Code runs it from now; so does an uninstall.
func TestHeldOnUpdateElsewhere(t *testing.T) {
	f := newFixture(t, "")
	f.on(t, f.p)
	newRoot := filepath.Join(f.home, "cache", "notes", "2")
	writeCase(t, newRoot, ".mcp.json", `{"mcpServers": {"srv": {"command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/s.js"]}}}`, false)
	writeCase(t, newRoot, "s.js", "1\n", false)
	installed := filepath.Join(f.home, ".claude", "plugins", "installed_plugins.json")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(installed, []byte(`{"version": 2, "plugins": {"notes@mk": [{"scope": "user", "installPath": "`+newRoot+`", "version": "2"}]}}`), 0o644))
	if why := Held(f.s.Home, "notes-mk"); !strings.Contains(why, "no file changed, and Claude Code runs it from "+newRoot+" now (version 2)") {
		t.Errorf("after an update elsewhere: %q", why)
	}
	must(os.WriteFile(installed, []byte(`{"version": 2, "plugins": {}}`), 0o644))
	if why := Held(f.s.Home, "notes-mk"); !strings.HasPrefix(why, "the plugin is no longer installed in Claude Code") {
		t.Errorf("after an uninstall: %q", why)
	}
}

// TestTwinLeavesOutRecords: a plugin that ships the files gemkit reads
// in an extension's folder as its own records (an install record that
// would link the twin to another folder, a settings file) gets a twin
// without them; its hooks/hooks.json, which Claude Code 2.1.330 loads
// beside the hooks plugin.json names (claudeplugin.HookMaps), is taken.
func TestTwinLeavesOutRecords(t *testing.T) {
	f := newFixture(t, "")
	writeCase(t, f.p.Root, ".gemini-extension-install.json", `{"type": "link", "source": "/"}`, false)
	writeCase(t, f.p.Root, ".env", "TOKEN=x\n", false)
	writeCase(t, f.p.Root, ".claude-plugin/plugin.json", `{"name": "notes", "hooks": "./none.json"}`, false)
	writeCase(t, f.p.Root, "none.json", `{"hooks": {}}`, false)
	writeCase(t, f.p.Root, "hooks/hooks.json", `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/x"}]}]}}`, false)
	plan, err := f.s.Prepare(f.p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".gemini-extension-install.json", ".env"} {
		if _, err := os.Lstat(filepath.Join(plan.Ext, name)); !os.IsNotExist(err) {
			t.Errorf("the twin has the plugin's %s: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(plan.Ext, "hooks", "hooks.json")); !strings.Contains(string(b), "touch") || len(plan.Twin.Hooks) != 1 {
		t.Errorf("the twin's hooks: %s, %v", b, plan.Twin.Hooks)
	}
}

// TestDoctor: a switched plugin as the switch left it is ok; once the
// person (or Claude Code) enabled it again, dropped its denial or its
// twin, or a project enables it, each is said with its fix, and the
// check says no.
func TestDoctor(t *testing.T) {
	f := newFixture(t, "")
	f.on(t, f.p)
	claude := filepath.Dir(f.s.Settings)
	var b strings.Builder
	if err := f.s.Check(&b, claude, t.TempDir()); err != nil || !strings.Contains(b.String(), "ok: notes@mk runs in gemkit's sandbox") {
		t.Errorf("doctor of a plugin as switched: %v\n%s", err, b.String())
	}
	writeCase(t, claude, "settings.json", `{"enabledPlugins": {"notes@mk": true}}`, false)
	project := t.TempDir()
	writeCase(t, project, ".claude/settings.json", `{"enabledPlugins": {"notes@mk": true}}`, false)
	b.Reset()
	err := f.s.Check(&b, claude, project)
	for _, want := range []string{
		"enables it again (enabledPlugins)",
		"no longer enables its twin notes@gemkit-sandbox",
		"no longer names gemkit's marketplace gemkit-sandbox",
		"no longer denies plugin:notes:srv",
		"enables it (project scope)",
		"fix: gemkit plugins sandbox notes@mk (it sets them again)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "5 problems") {
		t.Errorf("doctor said %v", err)
	}
}

// TestEnableAtOnce: plugins switched by gemkit processes at once (here
// goroutines) are all recorded, and Claude Code's settings hold each
// one's edit: the records and the settings are read, changed and
// written under the switch's lock.
func TestEnableAtOnce(t *testing.T) {
	f := newFixture(t, "{}")
	var plans []*Plan
	for i := range 8 {
		p := *f.p
		p.Name = "n" + string(rune('a'+i))
		p.ID = p.Name + "@mk"
		plan, err := f.s.Prepare(&p, nil)
		if err != nil {
			t.Fatal(err)
		}
		plans = append(plans, plan)
	}
	errs := make(chan error, len(plans))
	for _, plan := range plans {
		go func() {
			_, err := f.s.Enable(plan)
			errs <- err
		}()
	}
	for range plans {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	recs, err := f.s.ReadRecords()
	if err != nil {
		t.Fatal(err)
	}
	settings := string(f.settings(t))
	for _, plan := range plans {
		if recs.Plugins[plan.Plugin.ID] == nil || !strings.Contains(settings, `"`+TwinID(plan.Plugin.Name)+`": true`) {
			t.Errorf("%s: recorded %v, in the settings:\n%s", plan.Plugin.ID, recs.Plugins[plan.Plugin.ID] != nil, settings)
		}
	}
}
