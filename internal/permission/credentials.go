package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Credential is one kind of another program's stored credentials: the
// files where that program keeps a token, a password or a private key,
// closed to every tool whatever its read scope, as ~/.gemini is, unless
// the manifest names the kind in permissions.filesystem.credentials.
// docs/sandbox.md ("Credentials by kind") gives each one's source.
type Credential struct {
	// Kind is the name a manifest uses.
	Kind string
	// Words say whose credentials they are, for the consent text.
	Words string
	// paths returns the files (and folders) of this kind for one
	// environment: home is its $HOME, getenv its variables.
	paths func(home string, getenv func(string) string) []string
	// unmoved: no variable moves them, so one look per home folder does.
	unmoved bool
}

// Credentials are the kinds, in the order the words name them.
var Credentials = []Credential{
	{"codex", "Codex's login (~/.codex/auth.json, or under $CODEX_HOME)", func(h string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("CODEX_HOME"), h, ".codex"), "auth.json")}
	}, false},
	{"claude", "Claude Code's login (~/.claude/.credentials.json, or under $CLAUDE_CONFIG_DIR)", func(h string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("CLAUDE_CONFIG_DIR"), h, ".claude"), ".credentials.json")}
	}, false},
	{"qwen", "Qwen Code's login (~/.qwen/oauth_creds.json, or under $QWEN_HOME)", func(h string, env func(string) string) []string {
		return []string{filepath.Join(orHome(qwenHome(env("QWEN_HOME"), h), h, ".qwen"), "oauth_creds.json")}
	}, false},
	{"gh", "the GitHub CLI's tokens (~/.config/gh/hosts.yml, or under $GH_CONFIG_DIR)", func(h string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("GH_CONFIG_DIR"), configHome(h, env), "gh"), "hosts.yml")}
	}, false},
	{"npm", "npm's registry tokens (~/.npmrc, or $NPM_CONFIG_USERCONFIG)", func(h string, env func(string) string) []string {
		return []string{orHome(env("NPM_CONFIG_USERCONFIG"), h, ".npmrc"), orHome(env("npm_config_userconfig"), h, ".npmrc")}
	}, false},
	{"git", "git's stored passwords (~/.git-credentials, ~/.config/git/credentials)", func(h string, env func(string) string) []string {
		return []string{join(h, ".git-credentials"), join(configHome(h, env), "git", "credentials")}
	}, false},
	{"netrc", "passwords for curl, git and Python (~/.netrc, or $NETRC)", func(h string, env func(string) string) []string {
		return []string{orHome(env("NETRC"), h, ".netrc")}
	}, false},
	{"aws", "AWS's keys and session caches (~/.aws, $AWS_SHARED_CREDENTIALS_FILE, $AWS_CONFIG_FILE)", func(h string, env func(string) string) []string {
		return []string{join(h, ".aws"), env("AWS_SHARED_CREDENTIALS_FILE"), env("AWS_CONFIG_FILE")}
	}, false},
	{"kube", "Kubernetes' cluster credentials (~/.kube/config, or the files $KUBECONFIG lists)", func(h string, env func(string) string) []string {
		out := []string{join(h, ".kube", "config")}
		return append(out, filepath.SplitList(env("KUBECONFIG"))...)
	}, false},
	{"docker", "Docker's registry logins (~/.docker/config.json, or under $DOCKER_CONFIG)", func(h string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("DOCKER_CONFIG"), h, ".docker"), "config.json")}
	}, false},
	{"ssh", "SSH private keys (~/.ssh/id_*)", func(h string, _ func(string) string) []string {
		return sshKeys(h)
	}, true},
	{"gcloud", "Google Cloud's credentials (~/.config/gcloud, or $CLOUDSDK_CONFIG, and $GOOGLE_APPLICATION_CREDENTIALS)", func(h string, env func(string) string) []string {
		return []string{orHome(env("CLOUDSDK_CONFIG"), configHome(h, env), "gcloud"), env("GOOGLE_APPLICATION_CREDENTIALS")}
	}, false},
	{"pypi", "PyPI's upload tokens (~/.pypirc)", func(h string, _ func(string) string) []string {
		return []string{join(h, ".pypirc")}
	}, true},
	{"cargo", "Cargo's registry tokens (~/.cargo/credentials.toml, or under $CARGO_HOME)", func(h string, env func(string) string) []string {
		c := orHome(env("CARGO_HOME"), h, ".cargo")
		return []string{filepath.Join(c, "credentials.toml"), filepath.Join(c, "credentials")}
	}, false},
}

// join joins elem under home, "" when home is not absolute.
func join(home string, elem ...string) string {
	if !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(append([]string{home}, elem...)...)
}

// orHome is v when it is set, else name under home.
func orHome(v, home, name string) string {
	if filepath.IsAbs(v) {
		return v
	}
	return join(home, name)
}

// configHome is $XDG_CONFIG_HOME, else ~/.config.
func configHome(home string, env func(string) string) string {
	if c := env("XDG_CONFIG_HOME"); filepath.IsAbs(c) {
		return c
	}
	return join(home, ".config")
}

// qwenHome expands a leading ~ of QWEN_HOME, as Qwen Code does.
func qwenHome(q, home string) string {
	if rest, ok := strings.CutPrefix(q, "~"); ok && filepath.IsAbs(home) && (rest == "" || strings.HasPrefix(rest, "/")) {
		return home + rest
	}
	return q
}

// sshKeys are the private keys in ~/.ssh: the id_* files that are not
// .pub, and the default names whether or not they exist yet.
func sshKeys(home string) []string {
	dir := join(home, ".ssh")
	if dir == "" {
		return nil
	}
	var out []string
	for _, n := range []string{"id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_dsa"} {
		out = append(out, filepath.Join(dir, n))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, "id_") && !strings.HasSuffix(n, ".pub") {
			out = appendNew(out, filepath.Join(dir, n))
		}
	}
	return out
}

// CredentialKinds names the kinds, for messages.
func CredentialKinds() string {
	var names []string
	for _, c := range Credentials {
		names = append(names, c.Kind)
	}
	return strings.Join(names, ", ")
}

// CheckCredential says what is wrong with an entry of
// permissions.filesystem.credentials.
func CheckCredential(kind string) error {
	if slices.ContainsFunc(Credentials, func(c Credential) bool { return c.Kind == kind }) {
		return nil
	}
	return fmt.Errorf("is not a kind of credentials gemkit knows (the kinds: %s)", CredentialKinds())
}

// CredentialWords says in words whose credentials kind opens: the consent
// text's line for an entry of credentials.
func CredentialWords(kind string) string {
	for _, c := range Credentials {
		if c.Kind == kind {
			return c.Kind + ": " + c.Words
		}
	}
	return kind
}

// CredentialPaths are the credential files (and folders) of every kind
// but open, as they are named and as they resolve, for every environment
// the inputs gather: this process's (in.Getenv), the account's home folder
// with nothing set, and the running servers'; and in each home folder the
// default places too, whatever the variables say.
func CredentialPaths(in ClosedInputs, open []string) []string {
	return credentialPaths(in, func(kind string) bool { return !slices.Contains(open, kind) })
}

// OpenedCredentialPaths are the paths of the kinds open only, as
// CredentialPaths finds them.
func OpenedCredentialPaths(in ClosedInputs, open []string) []string {
	return credentialPaths(in, func(kind string) bool { return slices.Contains(open, kind) })
}

func credentialPaths(in ClosedInputs, want func(kind string) bool) []string {
	getenv := in.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	none := func(string) string { return "" }
	type view struct {
		home   string
		getenv func(string) string
	}
	views := []view{{in.Home, getenv}}
	for _, e := range in.envs()[1:] {
		e := e
		views = append(views, view{e.Home, func(k string) string {
			switch k {
			case "CLAUDE_CONFIG_DIR":
				return e.ClaudeConfigDir
			case "QWEN_HOME":
				return e.QwenHome
			case "XDG_CONFIG_HOME":
				return e.ConfigHome
			}
			return none(k)
		}})
	}
	// The names first, once each; then each looked at once, and only in
	// a folder that exists: most places are absent, and one lstat of
	// their folder says so for all of its names.
	var names []string
	seen := map[string]bool{}
	add := func(list []string) {
		for _, p := range list {
			if filepath.IsAbs(p) && !seen[filepath.Clean(p)] {
				seen[filepath.Clean(p)] = true
				names = append(names, filepath.Clean(p))
			}
		}
	}
	for _, c := range Credentials {
		if !want(c.Kind) {
			continue
		}
		// Each environment's places, and each home's default ones: a
		// program started without the variable uses those.
		homes := map[string]bool{}
		for _, v := range views {
			if !c.unmoved {
				add(c.paths(v.home, v.getenv))
			}
			if !homes[v.home] {
				homes[v.home] = true
				add(c.paths(v.home, none))
			}
		}
	}
	out := append([]string(nil), names...)
	dirs := map[string]bool{}
	for _, p := range names {
		d := filepath.Dir(p)
		ok, looked := dirs[d]
		if !looked {
			_, err := os.Lstat(d)
			ok = err == nil
			dirs[d] = ok
		}
		if !ok {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
