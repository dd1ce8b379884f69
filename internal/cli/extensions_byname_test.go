package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/geminisettings"
)

// byNameManifest has a server whose env asks for a variable of the
// person's that no setting declares, as terraform's published manifest
// does ("TFE_TOKEN": "$TFE_TOKEN"), and one it declares.
const byNameManifest = `{"name": "tf-ext", "version": "1.0.0",
 "settings": [{"name": "Org", "description": "Organization.", "envVar": "TFE_ORG"}],
 "mcpServers": {"terraform": {"command": "node", "args": ["${extensionPath}/server.js"],
  "env": {"TFE_TOKEN": "$TFE_TOKEN", "TFE_ORG": "$TFE_ORG"}}}}`

// TestSandboxByName: the switch says which of the person's variables a
// server's env asks for are dropped, and how to pass them; --allow-env
// and --allow-credentials are recorded, agreed to (the consent hash
// changes), shown by describe, and what stays amiss is said by the
// switch, describe and doctor: a variable Gemini CLI 0.61 keeps from
// gemkit mcp unless its entry names it, credentials not found; a kind no
// server is handed and a metadata address are refused in words.
func TestSandboxByName(t *testing.T) {
	e := newEnv(t)
	t.Setenv("HOME", e.home) // where the person's credentials are
	src := filepath.Join(t.TempDir(), "tf-ext")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(byNameManifest), 0o644)
	e.mustRun("link", src, "--consent")
	settings := geminisettings.Path(e.home)
	os.MkdirAll(filepath.Dir(settings), 0o700)
	os.WriteFile(settings, []byte(`{"mcpServers": {"gemkit": {"command": "gemkit", "args": ["mcp"], "trust": true}}}`), 0o600)

	dropped := "its servers' env asks for variables of yours that no setting declares, which gemkit's sandbox does not pass (Gemini CLI takes them from its own environment): terraform's TFE_TOKEN ($TFE_TOKEN); each arrives empty"
	fix := "pass it by name: `gemkit extensions sandbox tf-ext --allow-env TFE_TOKEN`"
	out := e.mustRun("sandbox", "tf-ext")
	if !strings.Contains(out, "Note: "+dropped+".\n    fix: "+fix) {
		t.Errorf("the switch does not tell of the dropped variable:\n%s", out)
	}
	for _, args := range [][]string{{"describe", "tf-ext"}, {"doctor"}} {
		if out := e.mustRun(args...); !strings.Contains(out, dropped) || !strings.Contains(out, fix) {
			t.Errorf("%v does not tell of the dropped variable:\n%s", args, out)
		}
	}

	st := extension.OpenStore(e.home)
	perm := extension.PermissionsHash(readManifest(t, src))
	out = e.mustRun("sandbox", "tf-ext", "--allow-env", "TFE_TOKEN", "--allow-credentials", "gcloud")
	for _, w := range []string{
		"and, as you allowed, read your gcloud credentials: " + "Google Cloud's application default credentials",
		"see your variable TFE_TOKEN (from the environment of the gemkit mcp that starts it)",
		// Gemini CLI 0.61 keeps TFE_TOKEN (a name holding TOKEN) from
		// the servers it starts, gemkit mcp included.
		"passed by name, TFE_TOKEN comes from the environment of the gemkit mcp that starts the servers, and Gemini CLI 0.61 leaves",
		"give the mcpServers entry gemkit `\"env\": {\"TFE_TOKEN\": \"$TFE_TOKEN\"}`",
		// The person is not logged in to Google Cloud.
		"its servers are handed your gcloud credentials, but there is none at " + filepath.Join(e.home, ".config", "gcloud", "application_default_credentials.json"),
		"`gcloud auth application-default login` writes it; then `gemkit extensions sandbox tf-ext` hands it",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the switch with --allow-env and --allow-credentials lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, dropped) {
		t.Errorf("the switch still says TFE_TOKEN is dropped:\n%s", out)
	}
	c, err := st.ServerChoice("tf-ext")
	if err != nil || strings.Join(c.Env, ",") != "TFE_TOKEN" || strings.Join(c.Credentials, ",") != "gcloud" {
		t.Fatalf("recorded %+v, %v", c, err)
	}
	if !st.ConsentGranted("tf-ext", perm) {
		t.Error("the widened terms were not agreed to")
	}
	if err := st.UpdateServerChoice("tf-ext", func(c *extension.ServerChoice, _ *[]string) { c.Env = append(c.Env, "OTHER") }); err != nil {
		t.Fatal(err)
	}
	if st.ConsentGranted("tf-ext", perm) {
		t.Error("another variable does not ask for consent again")
	}
	e.mustRun("sandbox", "tf-ext") // agreed again, OTHER and all

	// Logged in after the switch, and gemkit's entry passing the
	// variable.
	loginAfterSwitch(t, e, st)
	os.WriteFile(settings, []byte(`{"mcpServers": {"gemkit": {"command": "gemkit", "args": ["mcp"], "env": {"TFE_TOKEN": "$TFE_TOKEN"}}}}`), 0o600)
	for _, args := range [][]string{{"describe", "tf-ext"}, {"doctor"}} {
		out := e.mustRun(args...)
		for _, amiss := range []string{"none at", "not agreed", "TFE_TOKEN come", dropped} {
			if strings.Contains(out, amiss) {
				t.Errorf("%v still says %q:\n%s", args, amiss, out)
			}
		}
	}
	for _, args := range [][]string{{"describe", "tf-ext"}, {"doctor"}} {
		if out := e.mustRun(args...); !strings.Contains(out, "read your gcloud credentials") || !strings.Contains(out, "see your variables OTHER, TFE_TOKEN") {
			t.Errorf("%v does not show the credentials and variables handed:\n%s", args, out)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow-credentials", "ssh"}, "ssh's credentials are not handed to an MCP server"},
		{[]string{"--allow-env", "PATH"}, "PATH is set by gemkit itself"},
		{[]string{"--allow-host", "169.254.169.254"}, "is a cloud's metadata service"},
		{[]string{"--off", "--allow-env", "X"}, "--off takes no"},
	} {
		_, errOut, code := e.run(append([]string{"sandbox", "tf-ext"}, c.args...)...)
		if code == ExitOK || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want %q", c.args, code, errOut, c.want)
		}
	}
}

// loginAfterSwitch logs the person in to Google Cloud after tf-ext was
// switched with its gcloud credentials: the file is not handed until
// they agree to it, which describe and doctor say and the switch asks,
// showing it; then it is recorded.
func loginAfterSwitch(t *testing.T, e *env, st *extension.Store) {
	t.Helper()
	gcloud := filepath.Join(e.home, ".config", "gcloud")
	os.MkdirAll(gcloud, 0o700)
	adc := filepath.Join(gcloud, "application_default_credentials.json")
	os.WriteFile(adc, []byte(`{"type": "authorized_user"}`), 0o600)
	for _, args := range [][]string{{"describe", "tf-ext"}, {"doctor"}} {
		if out := e.mustRun(args...); !strings.Contains(out, "you have not agreed to hand them the file at "+adc) || !strings.Contains(out, "`gemkit extensions sandbox tf-ext` shows the file and asks you to agree to hand it") {
			t.Errorf("%v does not say the file is not agreed to:\n%s", args, out)
		}
	}
	if out := e.mustRun("sandbox", "tf-ext"); !strings.Contains(out, "Your credentials its servers are handed, read-only, each only while it stays the file it is now:\n  - gcloud: "+adc+" (27 bytes, sha256 ") {
		t.Errorf("the switch does not show the file handed:\n%s", out)
	}
	if c, err := st.ServerChoice("tf-ext"); err != nil || len(c.Handed) != 1 || c.Handed[0].Source != adc || c.Handed[0].Identity.Size != 27 {
		t.Errorf("recorded %+v, %v", c.Handed, err)
	}
}

// TestSandboxKeychainSetting: a sensitive setting that no .env gives a
// value (Gemini CLI keeps it in the person's keychain, which gemkit does
// not read) reaches a switched server empty; the switch, describe and
// doctor say so, with --allow-env as the fix, and stop once it is
// passed by name. A tour found it silent.
func TestSandboxKeychainSetting(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "setx")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(`{"name": "setx", "version": "1.0.0",
 "settings": [{"name": "API key", "description": "The key.", "envVar": "SETX_API_KEY", "sensitive": true}],
 "mcpServers": {"api": {"command": "node", "args": ["${extensionPath}/server.js"], "env": {"K": "$SETX_API_KEY"}}}}`), 0o644)
	e.mustRun("link", src, "--consent")
	note := "its setting API key ($SETX_API_KEY) is sensitive and no .env of the extension's gives it a value: Gemini CLI keeps such a value in your keychain, which gemkit does not read"
	fix := "`gemkit extensions sandbox setx --allow-env SETX_API_KEY`"
	for _, args := range [][]string{{"sandbox", "setx"}, {"describe", "setx"}, {"doctor"}} {
		if out, errOut, _ := e.run(args...); !strings.Contains(out, note) || !strings.Contains(out, fix) {
			t.Errorf("%v does not tell of the keychain's setting:\n%s%s", args, out, errOut)
		}
	}
	e.mustRun("sandbox", "setx", "--allow-env", "SETX_API_KEY")
	for _, args := range [][]string{{"describe", "setx"}, {"doctor"}} {
		if out, _, _ := e.run(args...); strings.Contains(out, note) {
			t.Errorf("%v still tells of the setting passed by name:\n%s", args, out)
		}
	}
}

// TestSandboxByNameNoEntry: with no mcpServers entry for gemkit mcp in
// Gemini CLI's settings, the advice for a variable Gemini CLI redacts
// says to add the entry first (a tour's finding: it named an entry that
// was not there).
func TestSandboxByNameNoEntry(t *testing.T) {
	e := newEnv(t)
	src := filepath.Join(t.TempDir(), "tf-ext")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "gemini-extension.json"), []byte(byNameManifest), 0o644)
	e.mustRun("link", src, "--consent")
	out := e.mustRun("sandbox", "tf-ext", "--allow-env", "TFE_TOKEN")
	if !strings.Contains(out, "Gemini CLI has no mcpServers entry for gemkit mcp yet: add it (`gemini mcp add -s user --trust gemkit gemkit mcp`), then") {
		t.Errorf("the advice without an entry:\n%s", out)
	}
}
