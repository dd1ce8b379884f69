package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/permission"
)

// credentialFiles are the 14 kinds' files at their default places in a
// home folder, by kind (docs/sandbox.md, "Credentials by kind").
var credentialFiles = map[string]string{
	"codex": ".codex/auth.json", "claude": ".claude/.credentials.json", "qwen": ".qwen/oauth_creds.json",
	"gh": ".config/gh/hosts.yml", "npm": ".npmrc", "git": ".git-credentials", "netrc": ".netrc",
	"aws": ".aws/credentials", "kube": ".kube/config", "docker": ".docker/config.json", "ssh": ".ssh/id_ed25519",
	"gcloud": ".config/gcloud/application_default_credentials.json", "pypi": ".pypirc", "cargo": ".cargo/credentials.toml",
}

// movedCredentials are the same kinds moved by the variables their
// programs honour, relative to a folder of the home's.
var movedCredentials = map[string][2]string{
	"codex": {"CODEX_HOME", "auth.json"}, "claude": {"CLAUDE_CONFIG_DIR", ".credentials.json"}, "qwen": {"QWEN_HOME", "oauth_creds.json"},
	"gh": {"GH_CONFIG_DIR", "hosts.yml"}, "npm": {"NPM_CONFIG_USERCONFIG", ""}, "aws": {"AWS_SHARED_CREDENTIALS_FILE", ""},
	"kube": {"KUBECONFIG", ""}, "docker": {"DOCKER_CONFIG", "config.json"}, "gcloud": {"CLOUDSDK_CONFIG", "credentials.db"},
	"cargo": {"CARGO_HOME", "credentials.toml"}, "netrc": {"NETRC", ""},
}

// TestCredentialsClosedByKind: a read: home and a read: full tool read
// none of the other programs' credentials, at their default places or
// where their variables moved them, as ~/.gemini is closed; an ordinary
// file of the home folder stays readable. A manifest's
// filesystem.credentials ["npm"] opens exactly ~/.npmrc (and the file its
// variable names). Before, a read: home tool read all 14.
func TestCredentialsClosedByKind(t *testing.T) {
	w := newWorld(t)
	files := map[string][]string{}
	write := func(kind, path string) {
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte("SECRET-"+kind+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		files[kind] = append(files[kind], path)
	}
	for kind, rel := range credentialFiles {
		write(kind, filepath.Join(w.home, rel))
	}
	env := map[string]string{}
	for kind, m := range movedCredentials {
		dir := filepath.Join(w.home, "moved", kind)
		if m[1] == "" {
			env[m[0]] = filepath.Join(dir, "file")
			write(kind, env[m[0]])
		} else {
			env[m[0]] = dir
			write(kind, filepath.Join(dir, m[1]))
		}
	}
	os.WriteFile(filepath.Join(w.home, "notes.txt"), []byte("ORDINARY\n"), 0o644)

	var script strings.Builder
	for _, list := range files {
		for _, f := range list {
			fmt.Fprintf(&script, "cat %q 2>/dev/null\n", f)
		}
	}
	script.WriteString("cat notes.txt 2>/dev/null || cat ../notes.txt\n")
	runWith := func(t *testing.T, pol permission.Policy) string {
		t.Helper()
		r := permission.Resolve(pol, permission.Where{Workspace: w.ws, Home: w.home,
			Closed: permission.ClosedInputs{Getenv: func(k string) string { return env[k] }}})
		p := FromResolved(r, w.ext, w.tmp, nil, nil)
		res := run(t, &Launcher{LockDir: lockDir(t)}, p, 30*time.Second, sh(script.String())...)
		if !strings.Contains(res.stdout, "ORDINARY") {
			t.Fatalf("the control (an ordinary file of the home folder) was not read: %v %q %q", res.err, res.stdout, res.stderr)
		}
		return res.stdout
	}
	for _, read := range []permission.Access{permission.AccessHome, permission.AccessFull} {
		t.Run(string(read), func(t *testing.T) {
			out := runWith(t, permission.Policy{Read: read})
			for kind := range credentialFiles {
				if strings.Contains(out, "SECRET-"+kind) {
					t.Errorf("read: %s read the %s credentials", read, kind)
				}
			}
		})
	}
	t.Run("opt-in npm", func(t *testing.T) {
		out := runWith(t, permission.Policy{Read: permission.AccessHome, Credentials: []string{"npm"}})
		if strings.Count(out, "SECRET-npm") != 2 {
			t.Errorf("credentials [npm] did not open ~/.npmrc and $NPM_CONFIG_USERCONFIG:\n%s", out)
		}
		for kind := range credentialFiles {
			if kind != "npm" && strings.Contains(out, "SECRET-"+kind) {
				t.Errorf("credentials [npm] opened the %s credentials", kind)
			}
		}
	})
}
