package permission

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A HandedFile is one of the person's credential files that gemkit hands
// an extension's MCP server on purpose (gemkit extensions sandbox NAME
// --allow-credentials KIND): the file Source, outside the sandbox,
// shown read-only at Target, a path relative to the server's HOME where
// the libraries of that kind look for it. Nothing else of the folder it
// lies in is shown: the rest of the person's credentials stay closed.
type HandedFile struct {
	Kind   string
	Source string
	Target string
}

// serverCredential is a kind of credentials that a server of the
// extensions' ecosystem reads through a client library, and where.
type serverCredential struct {
	kind string
	// words say what is handed, for the consent text and describe.
	words string
	// files are the files to hand for one environment, each with its
	// place under the server's HOME, the first existing source of each
	// target taken.
	files func(home string, getenv func(string) string) []HandedFile
}

// serverCredentials are the kinds a server can be handed. Each hands
// what its client libraries read from the home folder, at the place
// they read it (sources in docs/sandbox.md, "Credentials by kind"):
//
//   - gcloud: Application Default Credentials. Google's auth libraries
//     read $GOOGLE_APPLICATION_CREDENTIALS, else
//     $HOME/.config/gcloud/application_default_credentials.json
//     (google-auth-library 10.9's
//     _tryGetApplicationCredentialsFromWellKnownFile, under interop's
//     node_modules), which gcloud auth application-default login writes
//     (in $CLOUDSDK_CONFIG when set). Only that file: gcloud's own
//     tokens (credentials.db, access_tokens.db) stay closed.
//   - aws: the shared credentials and config files the AWS SDKs read
//     ($HOME/.aws/credentials, $HOME/.aws/config, moved by
//     AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE).
//   - kube: the kubeconfig Kubernetes clients read ($HOME/.kube/config,
//     or the first file $KUBECONFIG lists that exists).
var serverCredentials = []serverCredential{
	{"gcloud", "Google Cloud's application default credentials (application_default_credentials.json, which `gcloud auth application-default login` writes, or the file $GOOGLE_APPLICATION_CREDENTIALS names)",
		func(h string, env func(string) string) []HandedFile {
			const adc = "application_default_credentials.json"
			target := filepath.Join(".config", "gcloud", adc)
			return []HandedFile{
				{"gcloud", abs(env("GOOGLE_APPLICATION_CREDENTIALS")), target},
				{"gcloud", joinAbs(env("CLOUDSDK_CONFIG"), adc), target},
				{"gcloud", join(h, ".config", "gcloud", adc), target},
				{"gcloud", joinAbs(env("XDG_CONFIG_HOME"), "gcloud", adc), target},
			}
		}},
	{"aws", "AWS's shared credentials and config files (~/.aws/credentials and ~/.aws/config, or the files $AWS_SHARED_CREDENTIALS_FILE and $AWS_CONFIG_FILE name)",
		func(h string, env func(string) string) []HandedFile {
			creds, config := filepath.Join(".aws", "credentials"), filepath.Join(".aws", "config")
			return []HandedFile{
				{"aws", abs(env("AWS_SHARED_CREDENTIALS_FILE")), creds},
				{"aws", join(h, ".aws", "credentials"), creds},
				{"aws", abs(env("AWS_CONFIG_FILE")), config},
				{"aws", join(h, ".aws", "config"), config},
			}
		}},
	{"kube", "Kubernetes' kubeconfig (~/.kube/config, or the first file $KUBECONFIG lists)",
		func(h string, env func(string) string) []HandedFile {
			target := filepath.Join(".kube", "config")
			var out []HandedFile
			for _, p := range filepath.SplitList(env("KUBECONFIG")) {
				out = append(out, HandedFile{"kube", abs(p), target})
			}
			return append(out, HandedFile{"kube", join(h, ".kube", "config"), target})
		}},
}

func abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return ""
}

// joinAbs joins elem under dir when dir is absolute, else "".
func joinAbs(dir string, elem ...string) string {
	if !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}

// ServerCredentialKinds names the kinds a server can be handed, for
// messages.
func ServerCredentialKinds() []string {
	var out []string
	for _, c := range serverCredentials {
		out = append(out, c.kind)
	}
	return out
}

// CheckServerCredential says what is wrong with a kind of credentials
// asked for an extension's MCP servers.
func CheckServerCredential(kind string) error {
	if slices.ContainsFunc(serverCredentials, func(c serverCredential) bool { return c.kind == kind }) {
		return nil
	}
	if CheckCredential(kind) == nil {
		return fmt.Errorf("%s's credentials are not handed to an MCP server: the servers of the extensions gemkit knows read none of them from a file (the kinds a server can be given: %s; a token a server takes from a variable is passed with --allow-env)", kind, strings.Join(ServerCredentialKinds(), ", "))
	}
	return fmt.Errorf("is not a kind of credentials gemkit hands to an MCP server (the kinds: %s)", strings.Join(ServerCredentialKinds(), ", "))
}

// ServerCredentialWords say what handing kind gives a server.
func ServerCredentialWords(kind string) string {
	for _, c := range serverCredentials {
		if c.kind == kind {
			return c.words
		}
	}
	return kind
}

// HandedFiles are the files of kind to hand a server, as the
// environment whose HOME is home and whose variables getenv gives finds
// them: for each place under the server's HOME, the first that exists
// and is a regular file (links followed: Source is where they lead).
// None found is an error in words, naming where gemkit looked.
func HandedFiles(kind, home string, getenv func(string) string) ([]HandedFile, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	i := slices.IndexFunc(serverCredentials, func(c serverCredential) bool { return c.kind == kind })
	if i < 0 {
		return nil, fmt.Errorf("credentials %q %v", kind, CheckServerCredential(kind))
	}
	var out []HandedFile
	var looked []string
	done := map[string]bool{}
	for _, f := range serverCredentials[i].files(home, getenv) {
		if f.Source == "" || done[f.Target] {
			continue
		}
		if !slices.Contains(looked, f.Source) {
			looked = append(looked, f.Source)
		}
		real, err := filepath.EvalSymlinks(f.Source)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		done[f.Target] = true
		f.Source = real
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s credentials found to hand (looked at %s)", kind, strings.Join(looked, ", "))
	}
	return out, nil
}

// metadataHosts are the cloud metadata services' addresses and names,
// with the kinds of credentials a program that asks them is looking
// for: on a cloud machine each hands out the machine's own credentials
// (its service account's token, its instance role's keys) to whatever
// asks, so no host of these is ever allowed to a server: the person
// hands it their own credentials by kind instead.
//
// Sources: Google Cloud, "About VM metadata" (169.254.169.254,
// metadata.google.internal, and the bare name metadata; gcp-metadata
// 8.1's HOST_ADDRESS and SECONDARY_HOST_ADDRESS, under interop's
// node_modules); AWS EC2 User Guide, "Instance metadata service"
// (169.254.169.254, fd00:ec2::254), Amazon ECS Developer Guide, "Task
// IAM role" (169.254.170.2) and Amazon EKS User Guide, "Pod Identity"
// (169.254.170.23, fd00:ec2::23); Azure, "Instance Metadata Service"
// (169.254.169.254); Alibaba Cloud, "Instance metadata"
// (100.100.100.200); Oracle Cloud, "Instance metadata"
// (169.254.169.254, 192.0.0.192).
var metadataHosts = map[string][]string{
	"169.254.169.254":          {"gcloud", "aws"},
	"metadata.google.internal": {"gcloud"},
	"metadata":                 {"gcloud"},
	"fd00:ec2::254":            {"aws"},
	"169.254.170.2":            {"aws"},
	"169.254.170.23":           {"aws"},
	"fd00:ec2::23":             {"aws"},
	"100.100.100.200":          nil,
	"192.0.0.192":              nil,
}

// MetadataHost reports whether host (a name or an address, with or
// without a port or brackets) is a cloud metadata service, and the kinds
// of credentials that would answer what it is asked for (none: a cloud
// whose credentials gemkit does not hand).
func MetadataHost(host string) (kinds []string, ok bool) {
	h := strings.ToLower(strings.TrimSpace(host))
	if hp, _, err := net.SplitHostPort(h); err == nil {
		h = hp
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	if ip := net.ParseIP(h); ip != nil {
		h = ip.String()
	}
	kinds, ok = metadataHosts[h]
	return kinds, ok
}
