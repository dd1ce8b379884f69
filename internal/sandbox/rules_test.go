package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fsutil"
)

func TestCarveOut(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/ext", "a/b/other", "a/sib", "top"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "a", "file"), nil, 0o644)
	os.Symlink("/etc", filepath.Join(root, "a", "link"))
	got, anc, err := carve(root, []string{filepath.Join(root, "a", "b", "ext")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}; !reflect.DeepEqual(anc, want) {
		t.Fatalf("ancestors %v, want %v", anc, want)
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
	if got, anc, _ := carve(filepath.Join(root, "top"), []string{filepath.Join(root, "a")}); len(got) != 1 || len(anc) != 0 {
		t.Fatalf("unrelated root: %v %v", got, anc)
	}
	// Two excluded folders in different branches.
	got, _, err = carve(root, []string{filepath.Join(root, "a", "b", "ext"), filepath.Join(root, "top")})
	if err != nil {
		t.Fatal(err)
	}
	want = want[:3]
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("two excludes: got %v\nwant %v", got, want)
	}
}

func TestProtectedFolders(t *testing.T) {
	d := t.TempDir()
	home := filepath.Join(d, "home")
	for _, sub := range []string{"proj", ".gemini/extensions/ext", ".gemini/gemkit", "docs"} {
		os.MkdirAll(filepath.Join(home, sub), 0o755)
	}
	os.WriteFile(filepath.Join(home, ".profile"), nil, 0o644)
	p := Policy{Read: "home", Write: "home", Workspace: filepath.Join(home, "proj"), Home: home,
		ExtensionDir: filepath.Join(home, ".gemini", "extensions", "ext"), TempDir: t.TempDir(),
		Protected: []string{filepath.Join(home, ".gemini")}}
	rules, err := p.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		if strings.HasPrefix(r.Path, home) {
			got = append(got, fmt.Sprintf("%s w=%v list=%v file=%v", strings.TrimPrefix(r.Path, d), r.Write, r.ListOnly, r.File))
		}
	}
	want := []string{
		"/home/.gemini/extensions/ext w=false list=false file=false",
		"/home w=false list=true file=false",
		"/home/.profile w=false list=false file=true",
		"/home/docs w=false list=false file=false",
		"/home/proj w=false list=false file=false",
		"/home/.profile w=true list=false file=true",
		"/home/docs w=true list=false file=false",
		"/home/proj w=true list=false file=false",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rules under home:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A scope inside the protected folder is refused.
	p.Read, p.Write, p.Workspace = "workspace", "none", filepath.Join(home, ".gemini", "gemkit")
	if _, err := p.Rules(); err == nil || !contains(err.Error(), "closed to every tool") {
		t.Fatalf("workspace inside ~/.gemini: %v", err)
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

// TestCarveUnlistable: a closed path inside a folder the user cannot
// list (another user's /tmp/gemini holding its ide folder) does not make
// the rules fail; nothing beneath that folder is granted. Meaningful as
// uid 65534 (TestUnprivileged); as root every folder can be listed.
func TestCarveUnlistable(t *testing.T) {
	root, err := os.MkdirTemp("", "gemkit-carve-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	os.Chmod(root, 0o755)
	locked := filepath.Join(root, "gemini")
	os.MkdirAll(filepath.Join(locked, "ide"), 0o755)
	os.WriteFile(filepath.Join(root, "open.txt"), nil, 0o644)
	if err := os.Chmod(locked, 0o311); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	grants, ancestors, err := carve(root, []string{filepath.Join(locked, "ide")})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grants {
		if fsutil.Within(filepath.Join(locked, "ide"), g.path) {
			t.Fatalf("the closed folder was granted: %v", grants)
		}
	}
	if len(ancestors) == 0 || ancestors[0] != root {
		t.Fatalf("ancestors %v", ancestors)
	}
}

// TestResolver: the resolver of a run's rules names every path as
// filepath.EvalSymlinks does where it exists, and, where it does not, as
// resolving its longest existing prefix does (the rule it replaced,
// partlyOracle), whatever the links on the way: to a folder, relative,
// chained, leading nowhere, through "..", or a file taken for a folder.
func TestResolver(t *testing.T) {
	root := t.TempDir()
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	for _, d := range []string{"home/.config/app", "real/inner", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "home", "file"), nil, 0o644)
	for link, target := range map[string]string{
		"home/abs":       filepath.Join(root, "real"),
		"home/rel":       "../real",
		"home/chain":     "rel/inner",
		"home/nowhere":   "missing/place",
		"home/loop":      "loop",
		"real/inner/up":  "../../other",
		"home/.config/x": filepath.Join(root, "home", "chain"),
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		"", "home", "home/.config/app", "home/abs", "home/abs/inner", "home/rel/inner/up",
		"home/chain", "home/chain/up", "home/.config/x/up", "home/nowhere", "home/nowhere/deeper",
		"home/loop", "home/loop/x", "home/file", "home/file/x", "home/missing", "home/missing/a/b",
		"home/abs/missing/a", "home/rel/../other", "home/./abs//inner/", "real/inner/up/missing",
	}
	r := newResolver()
	for pass := range 2 { // the second from what the resolver remembers
		for _, p := range paths {
			path := filepath.Join(root, p)
			got, exists := r.partly(path)
			if want := partlyOracle(path); got != want {
				t.Errorf("pass %d: partly(%s) = %s, want %s", pass, p, got, want)
			}
			real, err := filepath.EvalSymlinks(path)
			if exists != (err == nil) || exists && got != real {
				t.Errorf("pass %d: %s: %s exists %v; EvalSymlinks %s, %v", pass, p, got, exists, real, err)
			}
			if e, ok := r.existing(path); ok != exists || ok && e != real {
				t.Errorf("pass %d: existing(%s) = %s, %v", pass, p, e, ok)
			}
		}
	}
}

// partlyOracle resolves the symlinks of the longest existing prefix of
// path, one EvalSymlinks a level, as the rules did before the resolver.
func partlyOracle(path string) string {
	path = filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	dir := filepath.Dir(path)
	if dir == path {
		return path
	}
	return filepath.Join(partlyOracle(dir), filepath.Base(path))
}
