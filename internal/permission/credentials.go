package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

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
	if credential(kind) != nil {
		return nil
	}
	return fmt.Errorf("is not a kind of credentials gemkit knows (the kinds: %s)", CredentialKinds())
}

// CredentialWords says in words whose credentials kind opens: the consent
// text's line for an entry of credentials.
func CredentialWords(kind string) string {
	if c := credential(kind); c != nil {
		return c.Kind + ": " + c.Words
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
