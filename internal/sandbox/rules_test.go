package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCarveOut(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/ext", "a/b/other", "a/sib", "top"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "a", "file"), nil, 0o644)
	os.Symlink("/etc", filepath.Join(root, "a", "link"))
	got, err := carveOut(root, filepath.Join(root, "a", "b", "ext"))
	if err != nil {
		t.Fatal(err)
	}
	want := []carved{
		{path: filepath.Join(root, "a", "b", "other")},
		{path: filepath.Join(root, "a", "file"), file: true},
		{path: filepath.Join(root, "a", "sib")},
		{path: filepath.Join(root, "top")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if got, _ := carveOut(filepath.Join(root, "top"), filepath.Join(root, "a")); len(got) != 1 {
		t.Fatalf("unrelated root: %v", got)
	}
}

func TestPolicyCheck(t *testing.T) {
	d := t.TempDir()
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Read: "workspace", Write: "home", Workspace: d, Home: d, ExtensionDir: d, TempDir: d}, `filesystem.write "home" is wider than filesystem.read "workspace"`},
		{Policy{Read: "everything", ExtensionDir: d, TempDir: d}, `unknown filesystem scope "everything"`},
		{Policy{Read: "workspace", Workspace: "rel", ExtensionDir: d, TempDir: d}, `workspace "rel" must be an absolute path`},
		{Policy{AllowedHosts: []string{"http://x/path"}, ExtensionDir: d, TempDir: d}, "allowedHosts"},
	} {
		err := c.p.Check()
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.p, err, c.want)
		}
	}
	// The workspace inside the extension folder cannot be written.
	ext := filepath.Join(d, "ext")
	os.MkdirAll(filepath.Join(ext, "ws"), 0o755)
	p := Policy{Read: "workspace", Write: "workspace", Workspace: filepath.Join(ext, "ws"), ExtensionDir: ext, TempDir: t.TempDir()}
	if _, err := p.Rules(); err == nil || !contains(err.Error(), "inside the extension's own folder") {
		t.Fatalf("err %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
