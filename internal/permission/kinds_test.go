package permission

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialKindOneRow: a kind a server can be handed is one row of
// Credentials, whole (its words, files with their formats, folder,
// login and, for a cloud, metadata hosts), and no other file of gemkit's
// speaks of a kind on its own: no switch on a kind's name, no login
// command, no file name of a kind's outside kinds.go. Before, the words
// were spread over five files and had drifted (loginWords answered
// "aws configure" for kube; cloudName("kube") was "kube").
func TestCredentialKindOneRow(t *testing.T) {
	for _, k := range ServerCredentialKinds() {
		sk := serverKind(k)
		if sk.Words == "" || sk.Cloud == "" || sk.Cloud == k || sk.Folder == "" || len(sk.Files) == 0 || sk.Login == "" {
			t.Errorf("%s: the row lacks a fact: %+v", k, sk)
		}
		for _, f := range sk.Files {
			if f.Name == "" || f.format == nil {
				t.Errorf("%s: a file without its name or format: %+v", k, f)
			}
		}
		for _, v := range sk.Vars {
			if !strings.Contains(strings.Join(fileNames(sk), " "), v.File) {
				t.Errorf("%s: $%s moves %q, which is none of its files", k, v.Name, v.File)
			}
		}
	}
	for _, k := range []string{"gcloud", "aws"} {
		if len(serverKind(k).Metadata) == 0 {
			t.Errorf("%s has no metadata host", k)
		}
	}
	if kinds, ok := MetadataHost("169.254.169.254:80"); !ok || strings.Join(kinds, ",") != "gcloud,aws" {
		t.Errorf("169.254.169.254: %v %v", kinds, ok)
	}
	if kinds, ok := MetadataHost("100.100.100.200"); !ok || len(kinds) != 0 {
		t.Errorf("Alibaba's: %v %v", kinds, ok)
	}

	// What only a row may say.
	only := []string{`case "gcloud"`, `case "aws"`, `case "kube"`, "aws configure", "application_default_credentials.json", "get-credentials"}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go"):
			return nil
		case p == "kinds.go" || filepath.Clean(p) == filepath.Join(root, "internal", "permission", "kinds.go"):
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range only {
			if strings.Contains(string(b), s) {
				t.Errorf("%s says %q: a kind's words come from its row (internal/permission/kinds.go)", p, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fileNames(sk *ServerKind) []string {
	var out []string
	for _, f := range sk.Files {
		out = append(out, f.Name)
	}
	return out
}
