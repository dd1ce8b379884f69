package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/ide"
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
	// environment: home is its $HOME, dir its working folder, getenv its
	// variables.
	paths func(home, dir string, getenv func(string) string) []string
	// unmoved: no variable moves them, so one look per home folder does.
	unmoved bool
}

// Credentials are the kinds, in the order the words name them: Codex's,
// the agents' (ide.Agents with a Credential), then the others'.
var Credentials = slices.Concat([]Credential{codexCredential}, agentCredentials(), otherCredentials)

// agentCredentials are the logins of the agents of ide.Agents, in their
// folders wherever each agent resolves them (ide.Agent.Folder).
func agentCredentials() []Credential {
	var out []Credential
	for _, a := range ide.Agents {
		if a.Credential == "" {
			continue
		}
		words := fmt.Sprintf("%s's login (~/%s/%s, or under $%s)", a.Name, a.HomeDir, a.Credential, a.HomeEnv)
		out = append(out, Credential{a.ID, words, func(h, dir string, env func(string) string) []string {
			f := a.Folder(env, h, dir)
			if f == "" {
				return nil
			}
			return []string{filepath.Join(f, a.Credential)}
		}, false})
	}
	return out
}

var codexCredential = Credential{"codex", "Codex's login (~/.codex/auth.json, or under $CODEX_HOME)", func(h, _ string, env func(string) string) []string {
	return []string{filepath.Join(orHome(env("CODEX_HOME"), h, ".codex"), "auth.json")}
}, false}

var otherCredentials = []Credential{
	{"gh", "the GitHub CLI's tokens (~/.config/gh/hosts.yml, or under $GH_CONFIG_DIR)", func(h, _ string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("GH_CONFIG_DIR"), configHome(h, env), "gh"), "hosts.yml")}
	}, false},
	{"npm", "npm's registry tokens (~/.npmrc, or $NPM_CONFIG_USERCONFIG)", func(h, _ string, env func(string) string) []string {
		return []string{orHome(env("NPM_CONFIG_USERCONFIG"), h, ".npmrc"), orHome(env("npm_config_userconfig"), h, ".npmrc")}
	}, false},
	{"git", "git's stored passwords (~/.git-credentials, ~/.config/git/credentials)", func(h, _ string, env func(string) string) []string {
		return []string{join(h, ".git-credentials"), join(configHome(h, env), "git", "credentials")}
	}, false},
	{"netrc", "passwords for curl, git and Python (~/.netrc, or $NETRC)", func(h, _ string, env func(string) string) []string {
		return []string{orHome(env("NETRC"), h, ".netrc")}
	}, false},
	{"aws", "AWS's keys and session caches (~/.aws, $AWS_SHARED_CREDENTIALS_FILE, $AWS_CONFIG_FILE)", func(h, _ string, env func(string) string) []string {
		return []string{join(h, ".aws"), env("AWS_SHARED_CREDENTIALS_FILE"), env("AWS_CONFIG_FILE")}
	}, false},
	{"kube", "Kubernetes' cluster credentials (~/.kube/config, or the files $KUBECONFIG lists)", func(h, _ string, env func(string) string) []string {
		out := []string{join(h, ".kube", "config")}
		return append(out, filepath.SplitList(env("KUBECONFIG"))...)
	}, false},
	{"docker", "Docker's registry logins (~/.docker/config.json, or under $DOCKER_CONFIG)", func(h, _ string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("DOCKER_CONFIG"), h, ".docker"), "config.json")}
	}, false},
	{"ssh", "SSH private keys (~/.ssh/id_*)", func(h, _ string, _ func(string) string) []string {
		return sshKeys(h)
	}, true},
	{"gcloud", "Google Cloud's credentials (~/.config/gcloud, or $CLOUDSDK_CONFIG, and $GOOGLE_APPLICATION_CREDENTIALS)", func(h, _ string, env func(string) string) []string {
		return []string{orHome(env("CLOUDSDK_CONFIG"), configHome(h, env), "gcloud"), env("GOOGLE_APPLICATION_CREDENTIALS")}
	}, false},
	{"pypi", "PyPI's upload tokens (~/.pypirc)", func(h, _ string, _ func(string) string) []string {
		return []string{join(h, ".pypirc")}
	}, true},
	{"cargo", "Cargo's registry tokens (~/.cargo/credentials.toml, or under $CARGO_HOME)", func(h, _ string, env func(string) string) []string {
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
	none := func(string) string { return "" }
	type view struct {
		home, dir string
		getenv    func(string) string
	}
	// This process's view: its agents' homes, then the rest of its
	// environment (in.Getenv).
	agentHomes := in.homes()
	views := []view{{in.Home, in.Dir, func(k string) string {
		if v := agentHomes[k]; v != "" {
			return v
		}
		if in.Getenv != nil {
			return in.Getenv(k)
		}
		return ""
	}}}
	for _, e := range in.envs()[1:] {
		e := e
		views = append(views, view{e.Home, e.Dir, func(k string) string {
			if k == "XDG_CONFIG_HOME" {
				return e.ConfigHome
			}
			return e.getenv(k)
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
				add(c.paths(v.home, v.dir, v.getenv))
			}
			if !homes[v.home] {
				homes[v.home] = true
				add(c.paths(v.home, "", none))
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
