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

// TestConsentWordsFitTheQuestion: "Read its source before you agree"
// comes only where a question follows it. After link --consent nothing
// is asked: neither link itself nor a later sandbox (the switch narrows
// what the servers may do, the consent stands) or --allow-host on a
// remote-only extension (run on a terminal of the person's own, the
// command is the agreement) says it; each still shows the consent text
// and says that consent is recorded.
func TestConsentWordsFitTheQuestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	far := filepath.Join(t.TempDir(), "far-ext")
	os.MkdirAll(far, 0o755)
	if err := os.WriteFile(filepath.Join(far, "gemini-extension.json"), []byte(`{"name": "far-ext", "version": "1.0.0",
 "mcpServers": {"notes": {"httpUrl": "http://127.0.0.1:3901/mcp"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	src := srvExt(t)
	os.WriteFile(filepath.Join(src, "server.js"), []byte("// a server\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string // in stdout and stderr
	}{
		{[]string{"link", src, "--consent"}, "Consent given with --consent."},
		{[]string{"link", far, "--consent"}, "Consent given with --consent."},
		{[]string{"sandbox", "srv-ext"}, "Consent recorded to srv-ext as it is now."},
		{[]string{"sandbox", "far-ext", "--allow-host", "127.0.0.1:3901"}, "Consent recorded to far-ext as it is now."},
	} {
		out, errOut, code := e.run(c.args...)
		all := out + errOut
		if code != ExitOK || !strings.Contains(all, "nobody has vetted this one") || !strings.Contains(all, c.want) {
			t.Errorf("%q: exit %d, no consent text or no %q:\n%s", c.args, code, c.want, all)
		}
		if strings.Contains(all, "before you agree") {
			t.Errorf("%q asks nothing, yet says to read the source before agreeing:\n%s", c.args, all)
		}
	}
}
