package child

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// vanishCase is the environment variable that makes the test binary, re-run
// in a user and mount namespace of its own, build a root for one case of
// TestBuildRootVanishes; vanishDir names the case's host folder.
const (
	vanishCase = "GEMKIT_TEST_VANISH_CASE"
	vanishDir  = "GEMKIT_TEST_VANISH_DIR"
)

// vanishCases are the ways a path of the plan goes while the child builds
// the root. Each is a host folder laid out by layout: keep/ (a file in
// it) and gone/ (a folder with a file), bound read-only and optional;
// rw/ bound writable, with rw/inner/ bound read-only over it. change
// changes the host's tree at a point of the build (before: before it
// begins; else one of bind's points, for the step of the path named).
// A case that must fail names what its error holds (fails).
var vanishCases = []struct {
	name  string
	at    string // "before" or a point of rootBuilder.bind
	path  string // the step at whose point change runs
	steps func(d string) []Mount
	// change runs with the host's tree at host (the old root's view
	// during the build).
	change func(host string) error
	// gone are paths that must be missing in the new root and on the
	// host after the build; fails, if set, is part of the error the
	// build must fail with instead.
	gone  []string
	fails string
}{
	{name: "removed before it is opened", at: "before", path: "gone", change: removeGone, gone: []string{"gone"}},
	{name: "removed once opened", at: "opened", path: "gone", change: removeGone, gone: []string{"gone"}},
	{name: "removed once its mount point is made", at: "mountpoint", path: "gone", change: removeGone, gone: []string{"gone"}},
	{name: "removed once its tree is cloned", at: "cloned", path: "gone", change: removeGone, gone: []string{"gone"}},
	{name: "removed before it is attached", at: "set", path: "gone", change: removeGone, gone: []string{"gone"}},
	{name: "replaced by a link", at: "before", path: "gone", change: func(h string) error {
		return replace(filepath.Join(h, "gone"), func(p string) error { return os.Symlink(filepath.Join(h, "keep"), p) })
	}},
	{name: "replaced by a file", at: "before", path: "gone", change: func(h string) error {
		return replace(filepath.Join(h, "gone"), func(p string) error { return os.WriteFile(p, []byte("a file now"), 0o644) })
	}},
	{name: "a folder on the way replaced by a file", at: "before", path: "gone", steps: func(d string) []Mount {
		return []Mount{{Kind: MountBind, Path: filepath.Join(d, "gone", "sub"), Optional: true}}
	}, change: func(h string) error {
		return replace(filepath.Join(h, "gone"), func(p string) error { return os.WriteFile(p, nil, 0o644) })
	}},
	{name: "removed inside a writable bind", at: "opened", path: "rw/inner", change: func(h string) error {
		return os.RemoveAll(filepath.Join(h, "rw", "inner"))
	}, gone: []string{"rw/inner"}},
	{name: "a link removed inside a writable bind", at: "before", path: "rw/link", steps: func(d string) []Mount {
		return []Mount{{Kind: MountSymlink, Path: filepath.Join(d, "rw", "link"), Target: "/etc/passwd"}}
	}, change: func(string) error { return nil }, gone: []string{"rw/link"}},
	{name: "a working folder gone inside a writable bind", at: "before", path: "rw/cwd", steps: func(d string) []Mount {
		return []Mount{{Kind: MountDir, Path: filepath.Join(d, "rw", "cwd")}}
	}, change: func(string) error { return nil }, fails: "gone from a folder bound from the host"},
	{name: "not optional", at: "opened", path: "gone", steps: func(d string) []Mount {
		return []Mount{{Kind: MountBind, Path: filepath.Join(d, "gone")}}
	}, change: removeGone, fails: "no such file or directory"},
}

func removeGone(h string) error { return os.RemoveAll(filepath.Join(h, "gone")) }

func replace(p string, with func(string) error) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return with(p)
}

// baseSteps are the binds every case starts with; the case's own steps
// follow.
func baseSteps(d string) []Mount {
	return []Mount{
		{Kind: MountBind, Path: filepath.Join(d, "keep"), Optional: true},
		{Kind: MountBind, Path: filepath.Join(d, "gone"), Optional: true},
		{Kind: MountBind, Path: filepath.Join(d, "rw"), Write: true, Optional: true},
		{Kind: MountBind, Path: filepath.Join(d, "rw", "inner"), Optional: true},
	}
}

// TestBuildRootVanishes: a path of the plan that goes at any point of the
// build (removed, replaced by a link or a file, a folder on the way
// replaced by a file), as another program's temporary folder does, is
// left out of the tool's root when it is optional, and the root is built:
// a closed folder that is gone has nothing left to hide. Nothing gone is
// made again on the host through a folder bound from it (a mount point,
// a link, a working folder). A path that is not optional still fails the
// build. Each case runs in a process of its own, in a user and mount
// namespace, with hooks at each point where bind meets the host's tree.
func TestBuildRootVanishes(t *testing.T) {
	if name := os.Getenv(vanishCase); name != "" {
		buildVanishCase(t, name, os.Getenv(vanishDir))
		return
	}
	for _, c := range vanishCases {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			layout(t, d)
			cmd := exec.Command(os.Args[0], "-test.run=^TestBuildRootVanishes$", "-test.v")
			cmd.Env = append(os.Environ(), vanishCase+"="+c.name, vanishDir+"="+d)
			uid, gid := os.Getuid(), os.Getgid()
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:                 unix.CLONE_NEWUSER | unix.CLONE_NEWNS,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
				GidMappingsEnableSetgroups: false,
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the build in a namespace of its own: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "vanish case ran") {
				t.Fatalf("the case did not run:\n%s", out)
			}
			for _, g := range c.gone {
				if _, err := os.Lstat(filepath.Join(d, g)); err == nil {
					t.Errorf("%s was made again on the host", g)
				}
			}
			if _, err := os.Stat(filepath.Join(d, "keep", "file")); err != nil {
				t.Errorf("the host's tree changed: %v", err)
			}
		})
	}
}

func TestVanishedPathsUnprivileged(t *testing.T) {
	sandboxtest.RerunUnprivileged(t, "^(TestBuildRootVanishes|TestLandlockRulesVanish)$")
}

func layout(t *testing.T, d string) {
	for _, dir := range []string{"keep", "gone/sub", "rw/inner", "base"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"keep/file", "gone/file", "rw/inner/file"} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// buildVanishCase runs in the namespaced process: it builds the root of
// one case and checks it from inside.
func buildVanishCase(t *testing.T, name, d string) {
	var c = vanishCases[0]
	for _, vc := range vanishCases {
		if vc.name == name {
			c = vc
		}
	}
	if c.name != name {
		t.Fatalf("no case %q", name)
	}
	steps := baseSteps(d)
	if c.steps != nil {
		steps = append(steps, c.steps(d)...)
	}
	if c.at == "before" {
		if err := c.change(d); err != nil {
			t.Fatal(err)
		}
	}
	b := &rootBuilder{hook: func(at string, s Mount) {
		if at == c.at && s.Path == filepath.Join(d, c.path) {
			if err := c.change(filepath.Join(oldRoot, d)); err != nil {
				t.Errorf("changing the host's tree: %v", err)
			}
		}
	}}
	_, err := b.build(filepath.Join(d, "base"), steps)
	if c.fails != "" {
		if err == nil || !strings.Contains(err.Error(), c.fails) {
			t.Fatalf("the build: %v, want an error with %q", err, c.fails)
		}
		t.Logf("vanish case ran: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("the build failed: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(d, "keep", "file")); err != nil || string(b) != "keep/file" {
		t.Errorf("keep/file in the new root: %q %v", b, err)
	}
	// What is gone shows nothing of what was there, and its mount point
	// made on the root is taken away with it.
	for _, p := range []string{"gone/file", "gone/sub"} {
		if _, err := os.Lstat(filepath.Join(d, p)); c.path == "gone" && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			t.Errorf("%s in the new root: %v", p, err)
		}
	}
	for _, g := range c.gone {
		if _, err := os.Lstat(filepath.Join(d, g)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is in the new root: %v", g, err)
		}
	}
	t.Log("vanish case ran")
}

// TestLandlockRulesVanish: a rule's path that went after the plan
// (removed, replaced by a link, a folder on the way replaced by a file) or
// is no longer of the kind planned (a folder where a file was, a file
// where a folder was) leaves an optional rule out and the ruleset is
// built; the same rule not optional fails it. A file rule is never put on
// a folder: it would grant its rights to all beneath.
func TestLandlockRulesVanish(t *testing.T) {
	abi := LandlockABI()
	if abi == 0 {
		t.Skip("no Landlock in this kernel (CI's kernel and this machine's have it: ABI 7)")
	}
	d := t.TempDir()
	layout(t, d)
	if err := os.Symlink(filepath.Join(d, "keep"), filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []PathRule{
		{Path: filepath.Join(d, "missing")},
		{Path: filepath.Join(d, "link")},
		{Path: filepath.Join(d, "keep", "file", "below")},
		{Path: filepath.Join(d, "keep", "file")},         // planned a folder, a file now
		{Path: filepath.Join(d, "keep"), File: true},     // planned a file, a folder now
		{Path: filepath.Join(d, "gone"), ListOnly: true}, // names only, gone
	} {
		if r.Path == filepath.Join(d, "gone") {
			os.RemoveAll(r.Path)
		}
		rules := []PathRule{{Path: filepath.Join(d, "keep")}, r}
		rules[1].Optional = true
		fd, err := landlockRuleset(abi, rules, 0)
		if err != nil {
			t.Errorf("optional %+v: %v", r, err)
		} else {
			unix.Close(fd)
		}
		rules[1].Optional = false
		if fd, err := landlockRuleset(abi, rules, 0); err == nil {
			unix.Close(fd)
			t.Errorf("not optional %+v: built", r)
		}
	}
}
