package sandbox

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/permission"
)

func TestSeatbeltProfile(t *testing.T) {
	base := Policy{
		Workspace: "/Users/ana/src/proj", Home: "/Users/ana",
		ExtensionDir: "/Users/ana/.gemini/extensions/code-analyzer", TempDir: "/private/var/folders/xy/T/gemkit-tool-1",
		RuntimePaths: []string{"/Users/ana/.pyenv/versions/3.12.1"},
		Protected:    []string{"/Users/ana/.gemini"},
	}
	cases := []struct {
		name        string
		read, write permission.Access
		hosts       []string
	}{
		{"none", "", "", nil},
		{"workspace-read-only", permission.AccessWorkspace, permission.AccessNone, nil},
		{"workspace-rw-network", permission.AccessWorkspace, permission.AccessWorkspace, []string{"https://linter-rules.example.com", "api.example.com:8443"}},
		{"home-rw", permission.AccessHome, permission.AccessHome, nil},
		{"full-read", permission.AccessFull, permission.AccessWorkspace, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := base
			p.Read, p.Write, p.AllowedHosts = c.read, c.write, c.hosts
			got, err := SeatbeltProfile(p, 3128)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "seatbelt", c.name+".sb"), []byte(got))
			// The extension folder's write denial comes after every allow,
			// so it wins in SBPL.
			if strings.LastIndex(got, "(deny file-write* (subpath \""+p.ExtensionDir) < strings.LastIndex(got, "(allow file-write*") {
				t.Fatal("extension folder denial is not last")
			}
			// ~/.gemini is denied after the scopes allow it, and the
			// extension's own folder inside it is readable again after that.
			deny := strings.Index(got, "(deny file-read* file-write*\n  (subpath \"/Users/ana/.gemini\")")
			if deny < strings.LastIndex(got, "(allow file-read*\n") || strings.Index(got, "(allow file-read* (subpath \""+p.ExtensionDir) < deny {
				t.Fatal("protected folder rules out of order")
			}
			if !strings.Contains(got, `(literal "/Users/ana/.gemini/extensions")`) || !strings.Contains(got, `(literal "/Users/ana")`) {
				t.Fatal("the folders leading to the extension folder may be renamed")
			}
		})
	}
	p := base
	p.Workspace = `/tmp/we"ird\dir`
	p.Read = permission.AccessWorkspace
	got, _ := SeatbeltProfile(p, 3128)
	if !strings.Contains(got, `(subpath "/tmp/we\"ird\\dir")`) {
		t.Fatalf("quoting:\n%s", got)
	}
	p.Write = permission.AccessHome
	if _, err := SeatbeltProfile(p, 3128); err == nil {
		t.Fatal("write wider than read accepted")
	}
}
