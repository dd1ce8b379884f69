package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWidenRemoteWords: --allow-host on an extension with remote servers
// only says, in a sentence, which addresses of this computer or of a
// private network gemkit mcp may reach for them; --default-profile, that
// it reaches none.
func TestWidenRemoteWords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "far-ext")
	os.MkdirAll(src, 0o755)
	if err := os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "far-ext", "version": "1.0.0",
 "mcpServers": {"notes": {"httpUrl": "http://127.0.0.1:3901/mcp"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustRun("link", src, "--consent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow-host", "127.0.0.1:3901"}, "When gemkit mcp --extension-servers connects to them, it may reach 127.0.0.1:3901, and no other address of this computer or of a private network. Consent recorded to far-ext as it is now.\n"},
		{[]string{"--allow-host", "localhost:3901"}, "it may reach 127.0.0.1:3901, localhost:3901, and no other address of this computer or of a private network."},
		{[]string{"--default-profile"}, "When gemkit mcp --extension-servers connects to them, it reaches no address of this computer or of a private network. Consent recorded"},
	} {
		if out := e.mustRun(append([]string{"sandbox", "far-ext"}, c.args...)...); !strings.Contains(out, c.want) {
			t.Errorf("%q: output lacks %q:\n%s", c.args, c.want, out)
		}
	}
}
