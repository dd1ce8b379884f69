package gemkitdir

import "testing"

// TestFolders: each folder where gemkit has always kept it (the paths a
// person's existing files are at must not move).
func TestFolders(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Config("/x/config"), "/x/config/gemkit"},
		{HomeConfig("/home/a"), "/home/a/.config/gemkit"},
		{Placeholders("/home/a"), "/home/a/.config/gemkit/placeholders"},
		{Data("/home/a"), "/home/a/.local/share/gemkit"},
		{ExtensionData("/home/a"), "/home/a/.local/share/gemkit/extension-data"},
		{Packages("/home/a"), "/home/a/.local/share/gemkit/packages"},
		{InGemini("/home/a/.gemini"), "/home/a/.gemini/gemkit"},
		{InGeminiHome("/home/a"), "/home/a/.gemini/gemkit"},
		{Servers("/g/.gemini"), "/g/.gemini/gemkit/servers"},
		{Runtime("/run/user/7"), "/run/user/7/gemkit"},
		{TempRuntime("/tmp", 7), "/tmp/gemkit-7"},
		{TempServers(7), "/tmp/gemkit-7/servers"},
		{TempPlaceholders(7), "/tmp/gemkit-placeholders-7"},
		{ClaudePluginHome("/home/a"), "/home/a/.local/share/gemkit/claude-plugins/home"},
		{ClaudePluginMarketplace("/home/a"), "/home/a/.local/share/gemkit/claude-plugins/marketplace"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", "/x/config")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	if d, err := UserConfig(); err != nil || d != "/x/config/gemkit" {
		t.Errorf("UserConfig: %s, %v", d, err)
	}
	if d, err := Cache(); err != nil || d != "/x/cache/gemkit" {
		t.Errorf("Cache: %s, %v", d, err)
	}
}
