package extmcp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/permission"
)

// sshKeyText is the person's SSH private key, which no attack may hand
// a server.
const sshKeyText = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"

// TestCredentialsHandedAsAgreed: a server handed gcloud credentials
// reads, at their place in its HOME, the file the person agreed to at
// gcloud's own place, and nothing else: each way the seventh red-team
// round made it read the person's SSH key there instead (a variable of
// gemkit mcp's environment naming the key, CLOUDSDK_CONFIG naming a
// folder whose file links to it, a workspace's .env setting
// CLOUDSDK_CONFIG=/proc/self/cwd/gc) and each file swapped after the
// consent keeps the server from starting, in words that name what and
// how to proceed; the key never reaches it. The genuine file is handed
// as before.
func TestCredentialsHandedAsAgreed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers of their own in the sandbox: runs without -short, as in CI")
	}
	for _, c := range []struct {
		name string
		// attack changes the home (home, adc, key) and the workspace ws
		// after the consent, and returns variables of gemkit mcp's
		// environment.
		attack func(t *testing.T, home, ws, adc, key string) []string
		want   []string // in the refusal; nil: handed
	}{
		{"genuine", func(*testing.T, string, string, string, string) []string { return nil }, nil},
		{"GOOGLE_APPLICATION_CREDENTIALS naming the SSH key", func(t *testing.T, home, ws, adc, key string) []string {
			return []string{"GOOGLE_APPLICATION_CREDENTIALS=" + key}
		}, []string{"$GOOGLE_APPLICATION_CREDENTIALS is set to", "Unset GOOGLE_APPLICATION_CREDENTIALS", "or move your credentials to ADC"}},
		{"CLOUDSDK_CONFIG naming a folder whose file links to the key", func(t *testing.T, home, ws, adc, key string) []string {
			gc := filepath.Join(home, "gc")
			os.MkdirAll(gc, 0o755)
			os.Symlink(key, filepath.Join(gc, "application_default_credentials.json"))
			return []string{"CLOUDSDK_CONFIG=" + gc}
		}, []string{"$CLOUDSDK_CONFIG is set to"}},
		{"a workspace's .env setting CLOUDSDK_CONFIG=/proc/self/cwd/gc", func(t *testing.T, home, ws, adc, key string) []string {
			// Gemini CLI 0.61 loads a trusted workspace's .env into its
			// own environment (loadEnvironment, @google/gemini-cli's
			// bundle), which the MCP servers it starts inherit, gemkit
			// mcp among them (CLOUDSDK_CONFIG is no name it redacts).
			os.WriteFile(filepath.Join(ws, ".env"), []byte("CLOUDSDK_CONFIG=/proc/self/cwd/gc\n"), 0o644)
			os.MkdirAll(filepath.Join(ws, "gc"), 0o755)
			os.Symlink(key, filepath.Join(ws, "gc", "application_default_credentials.json"))
			// gemkit mcp runs where Gemini CLI does, in the workspace.
			t.Chdir(ws)
			return []string{"CLOUDSDK_CONFIG=/proc/self/cwd/gc"}
		}, []string{`$CLOUDSDK_CONFIG is set to "/proc/self/cwd/gc"`, "a workspace's .env"}},
		{"the file swapped for a link to the key after consent", func(t *testing.T, home, ws, adc, key string) []string {
			os.Remove(adc)
			os.Symlink(key, adc)
			return nil
		}, []string{"ADC was replaced by a symbolic link (to \"KEY\") since you agreed to hand it", "agree to hand it as it is now: `gemkit extensions sandbox cloudrun`"}},
		{"the key's bytes written over the file after consent", func(t *testing.T, home, ws, adc, key string) []string {
			os.WriteFile(adc, []byte(sshKeyText), 0o600)
			return nil
		}, []string{"ADC changed since you agreed to hand it (its bytes changed)", "`gemkit extensions sandbox cloudrun`"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &setup{ext: widenExtension(t), ws: t.TempDir(), home: t.TempDir(), log: &gemkittest.Output{}}
			os.Chmod(s.home, 0o755)
			key := filepath.Join(s.home, ".ssh", "id_ed25519")
			os.MkdirAll(filepath.Dir(key), 0o700)
			os.WriteFile(key, []byte(sshKeyText), 0o600)
			adc := filepath.Join(s.home, ".config", "gcloud", "application_default_credentials.json")
			os.MkdirAll(filepath.Dir(adc), 0o700)
			genuine := `{"type": "authorized_user", "client_id": "agreed.apps.googleusercontent.com", "client_secret": "s", "refresh_token": "r"}`
			os.WriteFile(adc, []byte(genuine), 0o600)
			// The consent: the switch finds the file and records it.
			handed, err := permission.HandCredentials("gcloud", s.home, nil)
			if err != nil {
				t.Fatal(err)
			}
			widenManager(t, s, c.attack(t, s.home, s.ws, adc, key)...)
			sp := s.widenSpec("cloudrun")
			sp.Widening, sp.Handed = extension.Widening{Credentials: []string{"gcloud"}}, handed
			s.m.Sync([]extmcp.Spec{sp})
			target := filepath.Join(s.home, ".local", "share", "gemkit", "extension-data", "cloudrun", ".config", "gcloud", "application_default_credentials.json")
			text, isErr, err := call(t, s.m, sp, "read", map[string]any{"path": target})
			if strings.Contains(text, "PRIVATE KEY") || err != nil && strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(s.log.String(), "PRIVATE KEY") {
				t.Fatalf("the server read the SSH key: %q %v", text, err)
			}
			if c.want == nil {
				if err != nil || isErr || text != genuine {
					t.Fatalf("the genuine file: %q %v %v\n%s", text, isErr, err, s.log.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("started: %q %v", text, isErr)
			}
			if !strings.Contains(err.Error(), "is not started") {
				t.Errorf("not said to be refused its start: %v", err)
			}
			for _, w := range c.want {
				if w = strings.NewReplacer("ADC", adc, "KEY", key).Replace(w); !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant %q", err, w)
				}
			}
		})
	}
}
