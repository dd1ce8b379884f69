package extswitch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestGeminiCLIHostRoundTrip: the host seam's Gemini CLI adapter writes
// a switch into the person's settings (a server excluded, a hook turned
// off, gemkit's own hook added), reads it back as the switch sees it,
// and undoes it to the settings the person had, their own keys kept
// throughout.
func TestGeminiCLIHostRoundTrip(t *testing.T) {
	home := t.TempDir()
	host := GeminiCLI(extension.OpenStore(home))
	const mine = `{"ui": {"theme": "Dracula"}, "mcpServers": {"mine": {"command": "my-server"}}}`
	if err := os.MkdirAll(filepath.Dir(host.SettingsPath()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(host.SettingsPath(), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	def := HookDef{Event: "BeforeTool", Matcher: "write_file", Name: "gemkit-demo", Command: "gemkit extensions hook demo BeforeTool-1", Timeout: 5000}
	on, err := host.Apply(Edit{Exclude: []string{"demo-server"}, Disable: []string{"demo-hook"}, AddHooks: []HookDef{def}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := host.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Excluded, "demo-server") || !slices.Contains(s.Disabled, "demo-hook") || !slices.Contains(s.Servers, "mine") {
		t.Errorf("read back after the switch: %+v", s)
	}
	if !slices.ContainsFunc(s.Hooks, func(h HostHook) bool { return h.HookDef == def && h.Key != "" }) {
		t.Errorf("gemkit's hook not read back as written: %+v", s.Hooks)
	}
	if _, err := host.Apply(Edit{Include: on.Excluded, Enable: on.Disabled, RemoveHooks: []string{def.Command}, Drop: on.Created}); err != nil {
		t.Fatal(err)
	}
	if got := topKeys(t, host.SettingsPath()); !slices.Equal(got, []string{"mcpServers", "ui"}) {
		t.Errorf("after the switch off the settings hold %v, want the person's own keys alone", got)
	}
	if s, err = host.Read(); err != nil || len(s.Excluded)+len(s.Disabled)+len(s.Hooks) != 0 {
		t.Errorf("after the switch off: %+v, %v", s, err)
	}
}

// topKeys are the top-level keys of the JSON object in path, sorted.
func topKeys(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
