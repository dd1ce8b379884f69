//go:build unix

package extension

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkittest"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// The tests of this file attack gemkit's own reads and writes of an
// extension's folder, a clone and the workspace, by class: links of every
// form (absolute, relative climbing, chains, a link in a middle
// component, /proc magic links), FIFOs where a file is expected, hard
// links, and folders swapped for links, through every entry point of the
// package (load, list, describe's views, the content digest, install,
// update, uninstall). The secret each link points at must never be read,
// no call may block, and what is the person's must never be moved or
// deleted.

const secretText = "GEMINI_API_KEY=the-users-own-key"

// secretFolder makes a folder of the person's that an extension's links
// point at: a secret file, and a folder holding an "ext" sub-folder with
// a marker (what a moved-and-deleted folder would lose).
func secretFolder(t *testing.T) (dir, secret string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "users-own")
	writeTree(t, dir, map[string]string{
		".env":        secretText + "\n",
		"ext/marker":  "the person's file\n",
		"ext/keep.md": "also the person's\n",
	})
	return dir, filepath.Join(dir, ".env")
}

// linkForms are the forms of link to a secret file, relative to the
// extension's folder dir (which it may climb out of).
func linkForms(dir, secret string) map[string]string {
	rel, _ := filepath.Rel(dir, secret)
	return map[string]string{
		"absolute":         secret,
		"relative-climb":   rel,
		"climb-past-root":  strings.Repeat("../", 40) + strings.TrimPrefix(secret, "/"),
		"proc-cwd":         "/proc/self/cwd/" + filepath.Base(secret),
		"proc-fd":          "/proc/self/fd/0",
		"proc-root":        "/proc/self/root" + secret,
		"in-then-out":      "./sub/../" + rel,
		"dev":              "/dev/zero",
		"chain":            "chain-step",
		"middle-component": "",
		"fifo":             "",
	}
}

// plant puts the attack of form at name in the extension folder dir;
// secret is the file it leads to (for a link in a middle component, a
// file of name's base name beside secret, holding the same text).
func plant(t *testing.T, dir, name, form, secret string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	os.RemoveAll(p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	target := linkForms(filepath.Dir(p), secret)[form]
	switch form {
	case "fifo":
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	case "chain":
		if err := os.Symlink(secret, filepath.Join(filepath.Dir(p), "chain-step")); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	case "middle-component":
		// The folder holding name is itself a link to the secret's
		// folder, where a file of the same base name is the secret.
		parent := filepath.Dir(p)
		if parent == dir {
			parent = filepath.Join(dir, "via")
		}
		os.RemoveAll(parent)
		if err := os.Symlink(filepath.Dir(secret), parent); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(secret), filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	case "device":
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o644, 1<<8|5); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// within fails t when f does not return in time: a FIFO opened for
// reading blocks for good.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

func noSecret(t *testing.T, what string, vals ...any) {
	t.Helper()
	for _, v := range vals {
		if s := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(toString(v), "\n", " "), "\t", " ")); strings.Contains(s, "the-users-own-key") {
			t.Fatalf("%s read the secret: %s", what, s)
		}
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case error:
		if x == nil {
			return ""
		}
		return x.Error()
	case []byte:
		return string(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// secretAs is, for each file gemkit reads of an extension, a secret of
// the person's that would show if gemkit read it in that file's place:
// a valid file of that kind naming the key.
var secretAs = map[string]string{
	ManifestFile:        `{"name": "the-users-own-key", "version": "1.0.0"}`,
	"hooks/hooks.json":  `{"hooks": {"BeforeTool": [{"command": "the-users-own-key"}]}}`,
	"agents/a.md":       "---\nname: the-users-own-key\ndescription: d\n---\nthe-users-own-key\n",
	"skills/s/SKILL.md": "---\nname: the-users-own-key\ndescription: d\n---\nthe-users-own-key\n",
	"CONTEXT.md":        "the-users-own-key\n",
	InstallMetadataFile: `{"source": "the-users-own-key", "type": "local"}`,
}

// TestExtensionFilesThroughLinks plants each form of attack at each file
// gemkit reads of an extension and checks every reader: none reads the
// secret, none blocks, and the manifest's refusal names the file.
func TestExtensionFilesThroughLinks(t *testing.T) {
	manifest := manifestJSON("lx", "1.0.0", `"contextFileName": "CONTEXT.md"`)
	forms := []string{"absolute", "relative-climb", "climb-past-root", "proc-cwd", "proc-fd", "proc-root", "in-then-out", "dev", "chain", "middle-component", "fifo"}
	if os.Getuid() == 0 {
		forms = append(forms, "device")
	}
	for file, secretText := range secretAs {
		for _, form := range forms {
			t.Run(strings.ReplaceAll(file, "/", "_")+"/"+form, func(t *testing.T) {
				users, _ := secretFolder(t)
				secret := filepath.Join(users, "secret-"+filepath.Base(file))
				if err := os.WriteFile(secret, []byte(secretText), 0o644); err != nil {
					t.Fatal(err)
				}
				s := newStore(t)
				entry := filepath.Join(s.Dir(), "lx")
				writeTree(t, entry, map[string]string{ManifestFile: manifest, "sub/x": "x"})
				plant(t, entry, file, form, secret)
				within(t, "loading "+file, func() {
					all, err := s.List()
					noSecret(t, "List", err)
					for _, in := range all {
						noSecret(t, "List", in.Err, in.Metadata)
						if in.Extension != nil {
							noSecret(t, "the manifest", in.Extension.Manifest.Name)
						}
						if file == ManifestFile {
							if in.Extension != nil && in.Err == nil {
								t.Errorf("a manifest that is a %s was loaded", form)
							}
							continue
						}
						if in.Extension == nil {
							continue
						}
						e := in.Extension
						h, herr := e.Hooks(s.Workspace())
						noSecret(t, "Hooks", string(h), herr)
						noSecret(t, "Agents", e.Agents())
						sk, skipped := e.ScanSkills()
						noSecret(t, "ScanSkills", sk, skipped)
						if file == "CONTEXT.md" && len(e.ContextFiles) > 0 {
							t.Errorf("a context file that is a %s is listed: %v", form, e.ContextFiles)
						}
						noSecret(t, "Settings", in.Settings(s.Dir(), s.Workspace()))
						_, cerr := ReadContent(e.Dir)
						noSecret(t, "ReadContent", cerr)
						if body, err := e.ReadSkillBody(filepath.Join(e.Dir, "skills", "s", "SKILL.md")); err == nil {
							noSecret(t, "ReadSkillBody", body)
						}
					}
				})
				// The manifest's refusal says which file and why.
				if file == ManifestFile && form == "absolute" {
					_, err := LoadWith(entry, LoadOptions{WorkspacePath: s.Workspace()})
					if !errors.Is(err, fsutil.ErrOutside) || !strings.Contains(err.Error(), filepath.Join(entry, ManifestFile)) || !strings.Contains(err.Error(), "symbolic link to "+secret) {
						t.Errorf("refusal %v: want one naming %s and where it leads", err, filepath.Join(entry, ManifestFile))
					}
				}
			})
		}
	}
}

// The digest binds a link by its target as written, never by what it
// names: the secret changing does not change the digest, and reading it
// is never attempted.
func TestContentDigestNeverFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	_, secret := secretFolder(t)
	writeTree(t, dir, map[string]string{ManifestFile: manifestJSON("d", "1.0.0", ""), "lib/a.js": "a"})
	for name, target := range map[string]string{"abs": secret, "up": "../../../../../../../../" + secret, "dir": filepath.Dir(secret)} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if before.Digest != after.Digest {
		t.Fatal("the digest changed with the secret: it read through a link")
	}
	for _, l := range []string{"abs", "up", "dir"} {
		if _, ok := after.LinksOut[l]; !ok {
			t.Errorf("the link %s out of the folder is not noted: %v", l, after.LinksOut)
		}
	}
}

// TestContentBindsBytes: consent binds the bytes that run only for files
// no other name can change. A second hard link to a script (a build
// step's ln, pnpm's store) or a link into a folder tools write is named
// in words; a link into the system's folders is not.
func TestContentBindsBytes(t *testing.T) {
	base := t.TempDir()
	dir, ws := filepath.Join(base, "ext"), filepath.Join(base, "ws")
	writeTree(t, dir, map[string]string{ManifestFile: manifestJSON("b", "1.0.0", ""), "tool.sh": "echo ok\n", "lib/mod.sh": "x=1\n"})
	writeTree(t, ws, map[string]string{"lib.sh": "y=1\n"})
	c, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Bindable(dir, []string{ws}); err != nil {
		t.Fatalf("a folder of its own files: %v", err)
	}
	if err := os.Link(filepath.Join(dir, "tool.sh"), filepath.Join(ws, "tool-copy.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "lib.sh"), filepath.Join(dir, "lib", "ws.sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/env", filepath.Join(dir, "env")); err != nil {
		t.Fatal(err)
	}
	c, err = ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Bindable(dir, []string{ws})
	var be *BindError
	if !errors.As(err, &be) {
		t.Fatalf("Bindable = %v, want a *BindError", err)
	}
	if !slices.Equal(be.Shared, []string{"tool.sh"}) || len(be.LinksOut) != 1 || be.LinksOut[0].Path != "lib/ws.sh" {
		t.Errorf("BindError %+v: want tool.sh shared and lib/ws.sh linked into the workspace", be)
	}
	for _, want := range []string{"tool.sh", "another name", "cp --remove-destination", "lib/ws.sh", "symbolic link to " + filepath.Join(ws, "lib.sh")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
}

// TestInstallPathThroughLink: `install URL --path pkg/ext` where the
// repository makes pkg (or ext, or a chain) a link to a folder of the
// person's is refused, and that folder is neither moved nor deleted.
// Before, gemkit renamed the person's folder into its staging folder and
// deleted it with the staging folder when the install failed.
func TestInstallPathThroughLink(t *testing.T) {
	users, _ := secretFolder(t)
	deep := strings.Repeat("../", 40) + strings.TrimPrefix(users, "/")
	for name, links := range map[string]map[string]string{
		"absolute":       {"pkg": users},
		"relative-climb": {"pkg": deep},
		"chain":          {"pkg": "step", "step": users},
		"final":          {"pkg/ext": filepath.Join(users, "ext")},
		"inside-then-up": {"pkg": "real/../" + deep, "real/keep": ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			writeTree(t, dir, map[string]string{"README.md": "repo"})
			for l, target := range links {
				p := filepath.Join(dir, filepath.FromSlash(l))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if target == "" {
					os.WriteFile(p, []byte("x"), 0o644)
					continue
				}
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			}
			gemkittest.Git(t, dir, "init", "--quiet")
			gemkittest.Git(t, dir, "add", "-A")
			gemkittest.Git(t, dir, "commit", "--quiet", "-m", "links")
			s := newStore(t)
			_, err := s.Install(context.Background(), InstallRequest{Source: "file://" + dir, Subdir: "pkg/ext", Consent: yes})
			if err == nil || !strings.Contains(err.Error(), "outside the repository") {
				t.Errorf("install --path through a link: %v, want a refusal saying it leads outside the repository", err)
			}
			for _, f := range []string{"ext/marker", "ext/keep.md", ".env"} {
				if _, err := os.Stat(filepath.Join(users, f)); err != nil {
					t.Fatalf("the person's %s is gone: %v", f, err)
				}
			}
			if es := entries(t, s); len(es) != 0 {
				t.Errorf("left in the extensions folder: %v", es)
			}
		})
	}
}

// TestUpdatePathTurnedLink: an honest --path install, then the source
// turns pkg into a link to a folder of the person's that holds an
// extension of the same name: update refuses, asks nothing, and neither
// the person's folder nor the installed version is touched.
func TestUpdatePathTurnedLink(t *testing.T) {
	users, _ := secretFolder(t)
	writeTree(t, users, map[string]string{"ext/" + ManifestFile: manifestJSON("sub", "9.9.9", "")})
	dir, url := gitRepo(t, map[string]string{"pkg/ext/" + ManifestFile: manifestJSON("sub", "1.0.0", "")})
	s := newStore(t)
	if _, err := s.Install(context.Background(), InstallRequest{Source: url, Subdir: "pkg/ext", Consent: yes}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(users, filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	gemkittest.Git(t, dir, "add", "-A")
	gemkittest.Git(t, dir, "commit", "--quiet", "-m", "pkg is a link now")
	asked := false
	_, err := s.Update(context.Background(), "sub", UpdateRequest{Consent: func(context.Context, ConsentPrompt) (bool, error) { asked = true; return false, nil }})
	if err == nil || !strings.Contains(err.Error(), "outside the repository") || asked {
		t.Errorf("update through a link: %v (asked: %v), want a refusal before any question", err, asked)
	}
	for _, f := range []string{"ext/marker", "ext/" + ManifestFile} {
		if _, err := os.Stat(filepath.Join(users, f)); err != nil {
			t.Fatalf("the person's %s is gone: %v", f, err)
		}
	}
	in, err := s.Get("sub")
	if err != nil || in.Manifest().Version != "1.0.0" {
		t.Fatalf("the installed version: %v, %v", in, err)
	}
}

// A local install copies links as links and never reads what they name;
// uninstall removes the links, never their targets.
func TestLocalInstallAndUninstallLeaveTargets(t *testing.T) {
	users, secret := secretFolder(t)
	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("cp", "1.0.0", ""), "data": "->" + users, "key": "->" + secret})
	s := newStore(t)
	in, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"data", "key"} {
		fi, err := os.Lstat(filepath.Join(in.Entry, l))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s was not copied as a link: %v %v", l, fi, err)
		}
	}
	if err := s.Uninstall("cp"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ext/marker", ".env"} {
		if _, err := os.Stat(filepath.Join(users, f)); err != nil {
			t.Fatalf("uninstall removed the person's %s: %v", f, err)
		}
	}
}

// A FIFO or a link out at a file the copy reads fails the install in
// words (a FIFO is skipped, as any special file), and nothing blocks.
func TestInstallCopyNeverBlocks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("ff", "1.0.0", "")})
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	within(t, "install", func() {
		if _, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
			t.Errorf("install with a FIFO in the folder: %v", err)
		}
	})
	if _, err := os.Lstat(filepath.Join(s.Dir(), "ff", "pipe")); err == nil {
		t.Error("the FIFO was copied")
	}
}

// The settings file of the workspace, which a tool may have turned into a
// FIFO or a link, is read through a Root for the names it sets.
func TestWorkspaceSettingsThroughLinks(t *testing.T) {
	_, secret := secretFolder(t)
	for _, form := range []string{"absolute", "fifo", "proc-fd", "relative-climb"} {
		t.Run(form, func(t *testing.T) {
			s := newStore(t)
			writeTree(t, filepath.Join(s.Dir(), "st"), map[string]string{ManifestFile: manifestJSON("st", "1.0.0", `"settings":[{"name":"Key","envVar":"GEMINI_API_KEY"}]`)})
			plant(t, s.Workspace(), ".env", form, secret)
			in, err := s.Get("st")
			if err != nil {
				t.Fatal(err)
			}
			within(t, "Settings", func() {
				for _, st := range in.Settings(s.Dir(), s.Workspace()) {
					if st.Scope == "workspace" {
						t.Errorf("a workspace .env that is a %s was read: %+v", form, st)
					}
				}
			})
		})
	}
}

// The same attacks hold for an unprivileged user (CI runs as root).
func TestUntrustedTreesUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestExtensionFilesThroughLinks|TestContentDigestNeverFollowsLinks|TestContentBindsBytes|TestInstallPathThroughLink|TestUpdatePathTurnedLink|TestLocalInstallAndUninstallLeaveTargets|TestInstallCopyNeverBlocks|TestWorkspaceSettingsThroughLinks)$")
}
