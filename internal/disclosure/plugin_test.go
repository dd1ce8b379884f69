package disclosure

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// TestPluginNamedAsAnExtension: Gemini CLI, which does not see gemkit's
// plugins, may install an extension of a plugin's name. gemkit mcp then
// serves the extension alone and says why the plugin is left out; the
// two are no conflict of Gemini CLI's.
func TestPluginNamedAsAnExtension(t *testing.T) {
	home := t.TempDir()
	st := extension.OpenStore(home).WithWorkspace(home)
	src := t.TempDir()
	write := func(p, body string) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(src, "plugin.json"), `{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "twin", "version": "1.0.0"}`)
	write(filepath.Join(src, "skills", "greet", "SKILL.md"), "---\nname: greet\ndescription: Greets.\n---\nHi.\n")
	yes := func(context.Context, extension.ConsentPrompt) (bool, error) { return true, nil }
	if _, err := st.Install(context.Background(), extension.InstallRequest{Source: src, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	// As Gemini CLI's own install leaves it.
	write(filepath.Join(st.Dir(), "twin", extension.ManifestFile), `{"name": "twin", "version": "2.0.0"}`)
	set, err := Load(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Extensions) != 1 || set.Extensions[0].Ext.IsPlugin() {
		t.Errorf("served %d, the first a plugin: %v", len(set.Extensions), len(set.Extensions) > 0 && set.Extensions[0].Ext.IsPlugin())
	}
	if len(set.Skipped) != 1 || set.Skipped[0].Name != "twin" {
		t.Errorf("skipped %+v", set.Skipped)
	}
	all, _ := st.List()
	if cs := extension.Conflicts(all); len(cs) != 0 {
		t.Errorf("conflicts %+v", cs)
	}
}
