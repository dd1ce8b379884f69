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
// (absent, no hooks, an event list of the person's, a disabled list of
// theirs); the person's hooks and strings are kept, and a definition
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
			after, _ := os.ReadFile(path)
			want := tc.before
			if want == "" {
				want = "{}\n"
			}
			if string(after) != want {
				t.Errorf("after the undoing:\n%s\nwant:\n%s", after, want)
			}
		})
	}
}
