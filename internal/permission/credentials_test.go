package permission

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCredentialPathsByVariable: each variable that moves a kind's files
// closes the moved place and the home's default place both (a program
// started without the variable uses the default); opening a kind leaves
// out its paths and only its.
func TestCredentialPathsByVariable(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	for _, n := range []string{"id_work", "id_work.pub", "known_hosts"} {
		os.WriteFile(filepath.Join(home, ".ssh", n), nil, 0o600)
	}
	env := map[string]string{
		"CODEX_HOME": "/x/codex", "CLAUDE_CONFIG_DIR": "/x/claude", "QWEN_HOME": "~/q", "GH_CONFIG_DIR": "/x/gh",
		"NPM_CONFIG_USERCONFIG": "/x/npmrc", "NETRC": "/x/netrc", "AWS_SHARED_CREDENTIALS_FILE": "/x/aws-creds",
		"AWS_CONFIG_FILE": "/x/aws-config", "KUBECONFIG": "/x/k1:/x/k2", "DOCKER_CONFIG": "/x/docker",
		"CLOUDSDK_CONFIG": "/x/gcloud", "GOOGLE_APPLICATION_CREDENTIALS": "/x/adc.json", "CARGO_HOME": "/x/cargo",
		"XDG_CONFIG_HOME": "/x/config",
	}
	in := ClosedInputs{Home: home, Getenv: func(k string) string { return env[k] }}
	got := CredentialPaths(in, nil)
	for _, want := range []string{
		"/x/codex/auth.json", filepath.Join(home, ".codex", "auth.json"),
		"/x/claude/.credentials.json", filepath.Join(home, ".claude", ".credentials.json"),
		filepath.Join(home, "q", "oauth_creds.json"), filepath.Join(home, ".qwen", "oauth_creds.json"),
		"/x/gh/hosts.yml", filepath.Join(home, ".config", "gh", "hosts.yml"),
		"/x/npmrc", filepath.Join(home, ".npmrc"),
		"/x/config/git/credentials", filepath.Join(home, ".git-credentials"),
		"/x/netrc", filepath.Join(home, ".netrc"),
		"/x/aws-creds", "/x/aws-config", filepath.Join(home, ".aws"),
		"/x/k1", "/x/k2", filepath.Join(home, ".kube", "config"),
		"/x/docker/config.json", filepath.Join(home, ".docker", "config.json"),
		filepath.Join(home, ".ssh", "id_work"), filepath.Join(home, ".ssh", "id_ed25519"),
		"/x/gcloud", "/x/adc.json", filepath.Join(home, ".config", "gcloud"),
		filepath.Join(home, ".pypirc"),
		"/x/cargo/credentials.toml", filepath.Join(home, ".cargo", "credentials.toml"),
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not closed", want)
		}
	}
	for _, open := range []string{filepath.Join(home, ".ssh", "id_work.pub"), filepath.Join(home, ".ssh", "known_hosts")} {
		if slices.Contains(got, open) {
			t.Errorf("%s closed: it is no credential", open)
		}
	}
	npm := CredentialPaths(in, []string{"npm"})
	if slices.Contains(npm, "/x/npmrc") || slices.Contains(npm, filepath.Join(home, ".npmrc")) || len(npm) != len(got)-len(OpenedCredentialPaths(in, []string{"npm"})) {
		t.Errorf("opening npm: %d of %d paths left, npm's %v", len(npm), len(got), OpenedCredentialPaths(in, []string{"npm"}))
	}
}

// TestResolveReopensOnlyTheNamedKind: a policy naming a kind leaves its
// paths out of the closed ones, and a path another kind closes too stays.
func TestResolveReopensOnlyTheNamedKind(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	env := map[string]string{"NETRC": filepath.Join(home, ".npmrc")} // both kinds name one file
	w := Where{Workspace: ws, Home: home, Closed: ClosedInputs{Getenv: func(k string) string { return env[k] }}}
	closed := Resolve(Policy{Read: AccessHome}, w).Closed
	opened := Resolve(Policy{Read: AccessHome, Credentials: []string{"gh", "npm"}}, w).Closed
	if slices.Contains(opened, filepath.Join(home, ".config", "gh", "hosts.yml")) {
		t.Error("gh's hosts.yml stayed closed")
	}
	if !slices.Contains(opened, filepath.Join(home, ".npmrc")) {
		t.Error("~/.npmrc opened although $NETRC names it too")
	}
	if !slices.Contains(closed, filepath.Join(home, ".config", "gh", "hosts.yml")) || !slices.Contains(opened, filepath.Join(home, ".ssh", "id_rsa")) {
		t.Error("the other kinds are not closed")
	}
}

func TestCheckCredential(t *testing.T) {
	for _, k := range []string{"codex", "claude", "qwen", "gh", "npm", "git", "netrc", "aws", "kube", "docker", "ssh", "gcloud", "pypi", "cargo"} {
		if err := CheckCredential(k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range []string{"", "NPM", ".npmrc", "gemini"} {
		if CheckCredential(k) == nil {
			t.Errorf("%q accepted", k)
		}
	}
	if err := (Policy{Read: AccessWorkspace, Credentials: []string{"gh"}}).Check(); err == nil {
		t.Error("credentials with read: workspace accepted")
	}
}

// TestProtectedPattern: *.sublime-project guards the matching names that
// exist and stands for new ones (Guarded.Pattern), which Covering
// recognises, below them too, and only at the workspace's top.
func TestProtectedPattern(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "app.sublime-project"), nil, 0o644)
	list := ProtectedPaths(GuardInputs{Write: AccessWorkspace, Workspace: ws, Home: t.TempDir()})
	var pattern, existing bool
	for _, g := range list {
		switch {
		case g.Pattern && g.Path == filepath.Join(ws, "*.sublime-project"):
			pattern = true
		case !g.Pattern && g.Path == filepath.Join(ws, "app.sublime-project"):
			existing = true
		}
	}
	if !pattern || !existing {
		t.Fatalf("pattern %v, existing %v: %v", pattern, existing, list)
	}
	for path, want := range map[string]bool{
		filepath.Join(ws, "new.sublime-project"):        true,
		filepath.Join(ws, "new.sublime-project", "x"):   true,
		filepath.Join(ws, "sub", "new.sublime-project"): false,
		filepath.Join(ws, "sublime-project"):            false,
		filepath.Join(ws, ".dir-locals.el"):             true,
		filepath.Join(ws, ".helix", "languages.toml"):   true,
	} {
		if _, got := Covering(list, path); got != want {
			t.Errorf("Covering(%s) = %v, want %v", path, got, want)
		}
	}
	if err := CheckLiftable("app.sublime-project"); err != nil {
		t.Errorf("a Sublime project cannot be lifted: %v", err)
	}
	lifted := ProtectedPaths(GuardInputs{Write: AccessWorkspace, Workspace: ws, Home: t.TempDir(), Lifted: []string{"*.sublime-project", "app.sublime-project"}})
	if _, got := Covering(lifted, filepath.Join(ws, "app.sublime-project")); got {
		t.Error("the lifted names stayed protected")
	}
}
