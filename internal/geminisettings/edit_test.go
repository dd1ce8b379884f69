package geminisettings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestApplyHooks: turning hooks off and adding gemkit's for them, then
// the undoing, gives back the file byte for byte whatever shape it had
// (absent: no file, no hooks, an event list of the person's, a disabled
// list of theirs); the person's hooks and strings are kept, and a definition
// gemkit adds holds the event's matcher, sequential flag, name and
// timeout.
func TestApplyHooks(t *testing.T) {
	def := HookDef{Event: "BeforeTool", Matcher: "write_file|run_shell_command", Sequential: true, Name: "gemkit:x:BeforeTool-1",
		Command: "/usr/bin/gemkit extensions hook --home /h x BeforeTool-1", Timeout: 5000}
	for _, tc := range []struct{ name, before string }{
		{name: "absent"},
		{name: "comments, no hooks", before: "{\n  // mine\n  \"ui\": {\"theme\": \"GitHub\"}\n}\n"},
		{name: "a hook of mine", before: `{"hooks": {"BeforeTool": [{"matcher": "*", "hooks": [{"type": "command", "command": "echo mine"}]}]}, "hooksConfig": {"disabled": ["old"]}}`},
		{name: "empty lists", before: `{"hooks": {}, "hooksConfig": {"disabled": []}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if tc.before != "" {
				os.WriteFile(path, []byte(tc.before), 0o600)
			}
			res, err := Apply(path, Edit{Disable: []string{"node /ext/hook.js"}, AddHooks: []HookDef{def}, Exclude: []string{"memory"}})
			if err != nil {
				t.Fatal(err)
			}
			st, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(st.Disabled, "node /ext/hook.js") || !slices.ContainsFunc(st.Hooks, func(h Hook) bool { return h.Command == def.Command && h.Event == "BeforeTool" && h.Name == def.Name }) {
				mid, _ := os.ReadFile(path)
				t.Fatalf("after the edit: %+v\n%s", st, mid)
			}
			mid, _ := os.ReadFile(path)
			if !strings.Contains(string(mid), `{"matcher": "write_file|run_shell_command", "sequential": true, "hooks": [{"name": "gemkit:x:BeforeTool-1", "type": "command", "command": "/usr/bin/gemkit extensions hook --home /h x BeforeTool-1", "timeout": 5000}]}`) {
				t.Errorf("the definition as written:\n%s", mid)
			}
			if strings.Contains(tc.before, "echo mine") && !strings.Contains(string(mid), "echo mine") {
				t.Errorf("the person's hook is gone:\n%s", mid)
			}
			if _, err := Apply(path, Edit{Enable: res.Disabled, RemoveHooks: []string{def.Command}, Include: res.Excluded, Drop: res.Created}); err != nil {
				t.Fatal(err)
			}
			after, err := os.ReadFile(path)
			if tc.before == "" {
				// The file gemkit made goes with the undoing.
				if !os.IsNotExist(err) {
					t.Errorf("after the undoing, the file gemkit made is still there (%v):\n%s", err, after)
				}
			} else if string(after) != tc.before {
				t.Errorf("after the undoing:\n%s\nwant:\n%s", after, tc.before)
			}
		})
	}
}

// TestMadeFileKept: a settings file gemkit made is removed by the
// undoing only when nothing but gemkit's edit was ever in it: a key the
// person (or Gemini CLI) wrote meanwhile keeps it, with that key.
func TestMadeFileKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	res, err := Apply(path, Edit{Exclude: []string{"memory"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Created, KeyFile) {
		t.Fatalf("Created %v lacks the file", res.Created)
	}
	b, _ := os.ReadFile(path)
	theirs := strings.Replace(string(b), "{", "{\n  \"ui\": {\"theme\": \"GitHub\"},", 1)
	if err := os.WriteFile(path, []byte(theirs), 0o600); err != nil {
		t.Fatal(err)
	}
	undo, err := Apply(path, Edit{Include: res.Excluded, Drop: res.Created})
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(after), `"theme": "GitHub"`) || strings.Contains(string(after), "memory") || slices.Contains(undo.Dropped, KeyFile) {
		t.Errorf("after the undoing (%v, dropped %v):\n%s", err, undo.Dropped, after)
	}
}
