package permission

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/gemkit/gemkit/ide"
)

// A Credential is one kind of another program's stored credentials: the
// files where that program keeps a token, a password or a private key,
// closed to every tool whatever its read scope, as ~/.gemini is, unless
// the manifest names the kind in permissions.filesystem.credentials.
// docs/sandbox.md ("Credentials by kind") gives each one's source.
//
// A kind is one row of Credentials, and every word gemkit says of it
// comes from its row: what a tool finds closed, and, for a kind an
// extension's MCP server can be handed, its files, the variables that
// would move them, the metadata services a program asks in their
// stead, and how the person makes them.
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
	// Server, for a kind a server can be handed (--allow-credentials),
	// says what is handed and how; nil for the others.
	Server *ServerKind
}

// ServerKind is how one kind of credentials is handed to an extension's
// MCP server: the files at the kind's own place under the person's
// home, each checked and shown read-only at the same place under the
// server's HOME, where its client libraries look; never a file a
// variable names (handed.go).
type ServerKind struct {
	// Words say what is handed, for the consent text and describe.
	Words string
	// Cloud says whose credentials they are, in a refusal's words.
	Cloud string
	// Folder is the kind's folder under the home; Files are its files
	// there, in the format its libraries read (a file that is not is
	// refused).
	Folder string
	Files  []KindFile
	// Vars are the variables that make the kind's programs read another
	// file than Folder's: one that names another is refused.
	Vars []KindVar
	// Metadata are the hosts of the cloud metadata service a program
	// looking for these credentials asks when it finds no file.
	Metadata []string
	// Login says how the person makes the files.
	Login string
}

// KindFile is one file of a kind, by its name in the kind's folder,
// with the check of its format.
type KindFile struct {
	Name   string
	format func([]byte) error
}

// KindVar is a variable that moves one of a kind's files: it names the
// file (File, a KindFile's Name), a folder holding it (Folder), or a
// list of files (List, filepath.SplitList's separator).
type KindVar struct {
	Name   string
	File   string
	Folder bool
	List   bool
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
		out = append(out, Credential{Kind: a.ID, Words: words, paths: func(h, dir string, env func(string) string) []string {
			f := a.Folder(env, h, dir)
			if f == "" {
				return nil
			}
			return []string{filepath.Join(f, a.Credential)}
		}})
	}
	return out
}

var codexCredential = Credential{Kind: "codex", Words: "Codex's login (~/.codex/auth.json, or under $CODEX_HOME)", paths: func(h, _ string, env func(string) string) []string {
	return []string{filepath.Join(orHome(env("CODEX_HOME"), h, ".codex"), "auth.json")}
}}

// The three kinds a server can be handed. Sources (docs/sandbox.md,
// "Credentials by kind"):
//
//   - gcloud: Google's auth libraries read $GOOGLE_APPLICATION_CREDENTIALS
//     (or $google_application_credentials), else
//     $HOME/.config/gcloud/application_default_credentials.json
//     (google-auth-library 10.9, googleauth.js:
//     _tryGetApplicationCredentialsFromEnvironmentVariable and
//     _tryGetApplicationCredentialsFromWellKnownFile, under interop's
//     node_modules), which gcloud auth application-default login
//     writes, in $CLOUDSDK_CONFIG when set. $XDG_CONFIG_HOME moves
//     neither. The "type"s its fromJSON takes: checkADC.
//   - aws: the shared credentials and config files the AWS SDKs read,
//     moved by AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE (AWS
//     SDKs and Tools Reference Guide, "Shared config and credentials
//     files").
//   - kube: the kubeconfig Kubernetes clients read, or every file
//     $KUBECONFIG lists (Kubernetes documentation, "Organizing Cluster
//     Access Using kubeconfig Files").
var (
	gcloudServer = &ServerKind{
		Words:    "Google Cloud's application default credentials (~/.config/gcloud/application_default_credentials.json, which `gcloud auth application-default login` writes)",
		Cloud:    "Google Cloud's, as gcloud auth application-default login writes them",
		Folder:   filepath.Join(".config", "gcloud"),
		Files:    []KindFile{{"application_default_credentials.json", checkADC}},
		Vars:     []KindVar{{Name: "GOOGLE_APPLICATION_CREDENTIALS", File: adcName}, {Name: "google_application_credentials", File: adcName}, {Name: "CLOUDSDK_CONFIG", File: adcName, Folder: true}},
		Metadata: []string{"169.254.169.254", "metadata.google.internal", "metadata"},
		Login:    "`gcloud auth application-default login` writes it",
	}
	awsServer = &ServerKind{
		Words:    "AWS's shared credentials and config files (~/.aws/credentials and ~/.aws/config)",
		Cloud:    "AWS's",
		Folder:   ".aws",
		Files:    []KindFile{{"credentials", checkAWS}, {"config", checkAWS}},
		Vars:     []KindVar{{Name: "AWS_SHARED_CREDENTIALS_FILE", File: "credentials"}, {Name: "AWS_CONFIG_FILE", File: "config"}},
		Metadata: []string{"169.254.169.254", "fd00:ec2::254", "169.254.170.2", "169.254.170.23", "fd00:ec2::23"},
		Login:    "`aws configure` writes them",
	}
	kubeServer = &ServerKind{
		Words:  "Kubernetes' kubeconfig (~/.kube/config)",
		Cloud:  "Kubernetes'",
		Folder: ".kube",
		Files:  []KindFile{{"config", checkKubeconfig}},
		Vars:   []KindVar{{Name: "KUBECONFIG", File: "config", List: true}},
		Login:  "your cluster's tooling writes it (kubectl config, or your cloud's get-credentials)",
	}
)

const adcName = "application_default_credentials.json"

var otherCredentials = []Credential{
	{Kind: "gh", Words: "the GitHub CLI's tokens (~/.config/gh/hosts.yml, or under $GH_CONFIG_DIR)", paths: func(h, _ string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("GH_CONFIG_DIR"), configHome(h, env), "gh"), "hosts.yml")}
	}},
	{Kind: "npm", Words: "npm's registry tokens (~/.npmrc, or $NPM_CONFIG_USERCONFIG)", paths: func(h, _ string, env func(string) string) []string {
		return []string{orHome(env("NPM_CONFIG_USERCONFIG"), h, ".npmrc"), orHome(env("npm_config_userconfig"), h, ".npmrc")}
	}},
	{Kind: "git", Words: "git's stored passwords (~/.git-credentials, ~/.config/git/credentials)", paths: func(h, _ string, env func(string) string) []string {
		return []string{join(h, ".git-credentials"), join(configHome(h, env), "git", "credentials")}
	}},
	{Kind: "netrc", Words: "passwords for curl, git and Python (~/.netrc, or $NETRC)", paths: func(h, _ string, env func(string) string) []string {
		return []string{orHome(env("NETRC"), h, ".netrc")}
	}},
	{Kind: "gcloud", Words: "Google Cloud's credentials (~/.config/gcloud, or $CLOUDSDK_CONFIG, and $GOOGLE_APPLICATION_CREDENTIALS)", paths: func(h, _ string, env func(string) string) []string {
		return []string{orHome(env("CLOUDSDK_CONFIG"), configHome(h, env), "gcloud"), join(h, gcloudServer.Folder), env("GOOGLE_APPLICATION_CREDENTIALS"), env("google_application_credentials")}
	}, Server: gcloudServer},
	{Kind: "aws", Words: "AWS's keys and session caches (~/.aws, $AWS_SHARED_CREDENTIALS_FILE, $AWS_CONFIG_FILE)", paths: func(h, _ string, env func(string) string) []string {
		return []string{join(h, ".aws"), env("AWS_SHARED_CREDENTIALS_FILE"), env("AWS_CONFIG_FILE")}
	}, Server: awsServer},
	{Kind: "kube", Words: "Kubernetes' cluster credentials (~/.kube/config, or the files $KUBECONFIG lists)", paths: func(h, _ string, env func(string) string) []string {
		out := []string{join(h, ".kube", "config")}
		return append(out, filepath.SplitList(env("KUBECONFIG"))...)
	}, Server: kubeServer},
	{Kind: "docker", Words: "Docker's registry logins (~/.docker/config.json, or under $DOCKER_CONFIG)", paths: func(h, _ string, env func(string) string) []string {
		return []string{filepath.Join(orHome(env("DOCKER_CONFIG"), h, ".docker"), "config.json")}
	}},
	{Kind: "ssh", Words: "SSH private keys (~/.ssh/id_*)", paths: func(h, _ string, _ func(string) string) []string {
		return sshKeys(h)
	}, unmoved: true},
	{Kind: "pypi", Words: "PyPI's upload tokens (~/.pypirc)", paths: func(h, _ string, _ func(string) string) []string {
		return []string{join(h, ".pypirc")}
	}, unmoved: true},
	{Kind: "cargo", Words: "Cargo's registry tokens (~/.cargo/credentials.toml, or under $CARGO_HOME)", paths: func(h, _ string, env func(string) string) []string {
		c := orHome(env("CARGO_HOME"), h, ".cargo")
		return []string{filepath.Join(c, "credentials.toml"), filepath.Join(c, "credentials")}
	}},
}

// otherMetadataHosts are the metadata services of clouds whose
// credentials gemkit hands no kind of: Alibaba Cloud, "Instance
// metadata" (100.100.100.200); Oracle Cloud, "Instance metadata"
// (192.0.0.192). Azure's is 169.254.169.254, the gcloud and aws rows'.
var otherMetadataHosts = []string{"100.100.100.200", "192.0.0.192"}

// credential is the row of kind, nil for none.
func credential(kind string) *Credential {
	i := slices.IndexFunc(Credentials, func(c Credential) bool { return c.Kind == kind })
	if i < 0 {
		return nil
	}
	return &Credentials[i]
}

// serverKind is the row of kind when a server can be handed it, nil
// otherwise.
func serverKind(kind string) *ServerKind {
	if c := credential(kind); c != nil {
		return c.Server
	}
	return nil
}
