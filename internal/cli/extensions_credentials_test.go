//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gemkit/gemkit/internal/extension"
)

// credsHome gives the test's person (HOME, the process's environment,
// which the switch reads) an SSH key and, at gcloud's own place, their
// application default credentials; it returns both paths.
func credsHome(t *testing.T, e *env) (adc, key string) {
	t.Helper()
	t.Setenv("HOME", e.home)
	for _, v := range []string{"GOOGLE_APPLICATION_CREDENTIALS", "google_application_credentials", "CLOUDSDK_CONFIG", "XDG_CONFIG_HOME"} {
		t.Setenv(v, "")
	}
	key = filepath.Join(e.home, ".ssh", "id_ed25519")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600)
	adc = filepath.Join(e.home, ".config", "gcloud", "application_default_credentials.json")
	os.MkdirAll(filepath.Dir(adc), 0o700)
	os.WriteFile(adc, []byte(`{"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}`), 0o600)
	return adc, key
}

// TestSandboxCredentialsRefused: `gemkit extensions sandbox NAME
// --allow-credentials gcloud` hands the file at gcloud's own place, and
// shows it; every way the seventh red-team round made it hand the SSH
// key (a variable naming it, CLOUDSDK_CONFIG naming a folder whose file
// links to it, /proc/self/cwd as a repository's .env writes it, a link
// out of ~/.config/gcloud) and every file that is not gcloud's (a FIFO,
// another user's, the key's bytes) refuses the switch, in words that
// say what and how to proceed, and switches nothing.
func TestSandboxCredentialsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		attack func(t *testing.T, e *env, adc, key string)
		want   []string // in the refusal; nil: switched
	}{
		{"genuine", func(*testing.T, *env, string, string) {}, nil},
		{"GOOGLE_APPLICATION_CREDENTIALS naming the SSH key", func(t *testing.T, e *env, adc, key string) {
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", key)
		}, []string{"$GOOGLE_APPLICATION_CREDENTIALS is set to \"KEY\", which is not ADC, the file gemkit hands", "Unset GOOGLE_APPLICATION_CREDENTIALS", "or move your credentials to ADC"}},
		{"CLOUDSDK_CONFIG naming a folder whose file links to the key", func(t *testing.T, e *env, adc, key string) {
			gc := filepath.Join(e.home, "gc")
			os.MkdirAll(gc, 0o700)
			os.Symlink(key, filepath.Join(gc, "application_default_credentials.json"))
			t.Setenv("CLOUDSDK_CONFIG", gc)
		}, []string{"$CLOUDSDK_CONFIG is set to"}},
		{"CLOUDSDK_CONFIG=/proc/self/cwd/gc from a repository's .env", func(t *testing.T, e *env, adc, key string) {
			os.WriteFile(filepath.Join(e.ws, ".env"), []byte("CLOUDSDK_CONFIG=/proc/self/cwd/gc\n"), 0o644)
			os.MkdirAll(filepath.Join(e.ws, "gc"), 0o755)
			os.Symlink(key, filepath.Join(e.ws, "gc", "application_default_credentials.json"))
			t.Chdir(e.ws)
			t.Setenv("CLOUDSDK_CONFIG", "/proc/self/cwd/gc")
		}, []string{`$CLOUDSDK_CONFIG is set to "/proc/self/cwd/gc"`, "a workspace's .env"}},
		{"a link out of ~/.config/gcloud", func(t *testing.T, e *env, adc, key string) {
			os.Remove(adc)
			os.Symlink(key, adc)
		}, []string{"ADC is a link out of", "put the file gcloud keeps there in its place (`gcloud auth application-default login` writes it)"}},
		{"a FIFO in place of the file", func(t *testing.T, e *env, adc, key string) {
			os.Remove(adc)
			syscall.Mkfifo(adc, 0o600)
		}, []string{"ADC is not a regular file (a FIFO)"}},
		{"a file of another user's", func(t *testing.T, e *env, adc, key string) {
			if os.Getuid() != 0 {
				t.Skip("gives a file away: as root (permission's TestHandCredentialsUnprivileged has it as uid 65534)")
			}
			os.Chown(adc, 65534, 65534)
		}, []string{"ADC belongs to uid 65534, not to you"}},
		{"the key's bytes in place of the file", func(t *testing.T, e *env, adc, key string) {
			b, _ := os.ReadFile(key)
			os.WriteFile(adc, b, 0o600)
		}, []string{"ADC is not a JSON object, as application default credentials are"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			adc, key := credsHome(t, e)
			e.mustRun("link", srvExt(t), "--consent")
			c.attack(t, e, adc, key)
			out, errOut, code := e.run("sandbox", "srv-ext", "--allow-credentials", "gcloud")
			if strings.Contains(out+errOut, "BEGIN OPENSSH") {
				t.Errorf("the key is quoted:\n%s%s", out, errOut)
			}
			choice, err := extension.OpenStore(e.home).ServerChoice("srv-ext")
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				if code != ExitOK || !strings.Contains(out, "Your credentials its servers are handed, read-only, each only while it stays the file it is now:\n  - gcloud: "+adc+" (") || !choice.Switched {
					t.Fatalf("the genuine file: exit %d, switched %v\n%s%s", code, choice.Switched, out, errOut)
				}
				return
			}
			if code != ExitNo || choice.Switched {
				t.Fatalf("exit %d, switched %v, want a refusal\n%s%s", code, choice.Switched, out, errOut)
			}
			r := strings.NewReplacer("ADC", adc, "KEY", key)
			for _, w := range append(c.want, "not switched: your gcloud credentials are not handed: ", "then run `gemkit extensions sandbox srv-ext --allow-credentials gcloud` again") {
				if !strings.Contains(errOut, r.Replace(w)) {
					t.Errorf("%s\nwant %q", errOut, r.Replace(w))
				}
			}
		})
	}
}

// TestSandboxCredentialsSwapped: a file swapped after the switch is said
// by doctor and describe (gemkit mcp does not start the servers), with
// the command that agrees to it as it is now; switching again shows it
// and records it, and nothing is amiss.
func TestSandboxCredentialsSwapped(t *testing.T) {
	e := newEnv(t)
	adc, _ := credsHome(t, e)
	e.mustRun("link", srvExt(t), "--consent")
	e.mustRun("sandbox", "srv-ext", "--allow-credentials", "gcloud")
	os.WriteFile(adc+".new", []byte(`{"type": "authorized_user", "client_id": "other"}`), 0o600)
	os.Rename(adc+".new", adc)
	want := "your gcloud credentials are not handed: " + adc + " changed since you agreed to hand it (another file is there now)"
	for _, args := range [][]string{{"doctor"}, {"describe", "srv-ext"}} {
		if out, _, _ := e.run(args...); !strings.Contains(out, want) || !strings.Contains(out, "`gemkit extensions sandbox srv-ext`") {
			t.Errorf("%v does not say the file changed:\n%s", args, out)
		}
	}
	if out := e.mustRun("sandbox", "srv-ext"); !strings.Contains(out, "  - gcloud: "+adc+" (") {
		t.Errorf("the switch does not show the file as it is now:\n%s", out)
	}
	for _, args := range [][]string{{"doctor"}, {"describe", "srv-ext"}} {
		if out, _, _ := e.run(args...); strings.Contains(out, "credentials are not handed") {
			t.Errorf("%v still says it:\n%s", args, out)
		}
	}
}
