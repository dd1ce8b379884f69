package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/sandbox/child"
)

// PathRule grants access beneath one path; see child.PathRule.
type PathRule = child.PathRule

// systemReadDirs are the read-only runtime paths every tool gets: shared
// libraries, interpreters installed by the system, and certificates.
var systemReadDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/alternatives", "/etc/ld.so.conf.d", "/etc/fonts", "/etc/python3", "/etc/python3.11", "/usr/share/zoneinfo"}

// systemReadFiles are single files of /etc a runtime reads at start-up. The
// rest of /etc (shadow, ssh keys, credentials of services) stays denied.
var systemReadFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf",
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf",
	"/etc/protocols", "/etc/services", "/etc/mime.types", "/etc/os-release", "/etc/locale.alias",
	"/etc/inputrc", "/etc/magic", "/etc/debian_version",
	"/dev/zero", "/dev/random", "/dev/urandom",
}

// systemInfo are kernel files that describe the machine, not its users,
// which runtimes read to size themselves (Node's os.cpus(), glibc's
// get_nprocs). /proc/<pid> of other processes stays closed.
var systemInfo = []struct {
	path string
	file bool
}{
	{"/proc/cpuinfo", true}, {"/proc/stat", true}, {"/proc/meminfo", true}, {"/proc/loadavg", true},
	{"/proc/uptime", true}, {"/proc/version", true}, {"/proc/sys/kernel/osrelease", true},
	{"/sys/devices/system/cpu", false}, {"/sys/fs/cgroup/cpu.max", true}, {"/sys/fs/cgroup/memory.max", true},
}

// systemWriteFiles are devices every process may write.
var systemWriteFiles = []string{"/dev/null", "/dev/full"}

// Rules computes the filesystem rules of p for the Landlock or seatbelt
// backend. Paths are resolved through symlinks so that a rule names the real
// directory. The extension folder is carved out of every writable scope:
// Landlock rules are a union, so rather than granting a parent and
// subtracting the extension folder, the writable scope is split into the
// siblings of the path that leads to it.
func (p *Policy) Rules() ([]PathRule, error) {
	rules, _, err := p.rules(true)
	return rules, err
}

// rules computes the rules; with splitReadOnly false the ReadOnly folders
// inside the write scope are not split out of it but returned apart, for
// the mount namespace to cover with read-only binds (which, unlike a
// split, leaves the folders around them writable).
func (p *Policy) rules(splitReadOnly bool) ([]PathRule, []overlay, error) {
	var overlays []overlay
	rules, err := p.rulesInto(splitReadOnly, false, &overlays, nil)
	return rules, overlays, err
}

// sealedRules are the rules of a run in a mount namespace whose absent
// protected names are kept by the watch of its writes rather than by
// placeholders (Launcher.supervised): each folder that holds one is
// sealed (sealedFolder), and nothing is bound over those names, so
// nothing is made in the person's folder for them. A write scope that
// holds a closed folder or the extension's (split into its entries, so
// not bound whole) is not sealed: its absent names get placeholders as
// before (seal is then empty).
func (p *Policy) sealedRules() ([]PathRule, []overlay, []sealedFolder, error) {
	var overlays []overlay
	var sealed []sealedFolder
	rules, err := p.rulesInto(false, true, &overlays, &sealed)
	if err == nil && len(sealed) == 0 {
		return rules, overlays, nil, nil
	}
	return rules, overlays, sealed, err
}

// sealedFolder is a folder of the write scope that holds protected
// names that do not exist (and maybe some that do): its rule leaves the
// tool's own calls only reading in it (PathRule.NoCreate), each existing
// folder in it keeps a rule of its own, and the watch of the tool's
// writes makes, writes, renames and removes there, for the tool, every
// name but the protected ones (writes_linux.go).
type sealedFolder struct {
	path string
	// names are the protected names in it, patterns its protected
	// patterns of names (permission.Guarded's Pattern).
	names, patterns []string
}

// overlay is a path inside a writable bind that is bound read-only over
// it. A guarded one (Policy.Guarded) must be there: the run fails rather
// than leave it creatable.
type overlay struct {
	path    string
	guarded bool
	// absent: a guarded path that does not exist; the launcher puts a
	// placeholder there for the run (a folder when dir, else a file). A
	// guarded path that exists may be another run's placeholder, which
	// the launcher holds too, and makes again (of kind dir) if it went
	// meanwhile.
	absent, dir bool
	// pattern: path's base is a pattern of names (permission.Guarded's
	// Pattern) that nothing is bound over: the launcher watches the
	// folder and stops a tool that creates a matching name.
	pattern bool
	why     string
	// keep are the names the pattern matched when the policy was
	// computed: the person's own, guarded one by one.
	keep []string
}

func (p *Policy) rulesInto(splitReadOnly, seal bool, overlays *[]overlay, sealed *[]sealedFolder) ([]PathRule, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var rules []PathRule
	add := func(path string, write, file bool, why string) {
		rules = append(rules, PathRule{Path: path, Write: write, File: file, Why: why})
	}
	for _, d := range systemReadDirs {
		if real, ok := existing(d); ok {
			add(real, false, false, "system runtime")
		}
	}
	for _, f := range systemReadFiles {
		if real, ok := existing(f); ok {
			add(real, false, true, "system runtime")
		}
	}
	for _, f := range systemWriteFiles {
		if real, ok := existing(f); ok {
			add(real, true, true, "device")
		}
	}
	for _, f := range systemInfo {
		if _, err := os.Stat(f.path); err == nil {
			add(f.path, false, f.file, "machine description")
			rules[len(rules)-1].Optional = true
		}
	}
	// Not resolved here: "/proc/self" must be opened by the sandbox child,
	// whose pid the tool keeps across exec; resolved in gemkit it would
	// name gemkit's own entry.
	add("/proc/self", false, false, "the tool's own /proc entry")
	for _, rp := range p.RuntimePaths {
		real, ok := existing(rp)
		if !ok {
			continue
		}
		if real == "/" || p.Home != "" && fsutil.Within(real, filepath.Clean(p.Home)) {
			return nil, fmt.Errorf("runtime installation %q would expose all of %q; refusing", rp, real)
		}
		add(real, false, !isDir(real), "runtime installation")
	}

	ext, err := filepath.EvalSymlinks(p.ExtensionDir)
	if err != nil {
		return nil, fmt.Errorf("extension folder: %w", err)
	}
	add(ext, false, false, "the extension's own folder (read-only)")

	tmp, err := filepath.EvalSymlinks(p.TempDir)
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	if fsutil.Within(ext, tmp) {
		return nil, fmt.Errorf("temp dir %q is inside the extension folder", tmp)
	}
	add(tmp, true, false, "private temp dir")

	protected := make([]string, 0, len(p.Protected))
	for _, d := range p.Protected {
		protected = append(protected, resolvePartly(d))
	}
	for _, c := range p.Caches {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			return nil, fmt.Errorf("cache folder: %w", err)
		}
		if !isDir(real) {
			return nil, fmt.Errorf("cache folder %q is not a folder", c)
		}
		if real == "/" || fsutil.Within(real, ext) || fsutil.Within(ext, real) {
			return nil, fmt.Errorf("cache folder %q overlaps the program's own folder %q, which stays read-only", real, ext)
		}
		for _, d := range protected {
			if fsutil.Within(d, real) || fsutil.Within(real, d) {
				return nil, fmt.Errorf("cache folder %q overlaps %q, which is closed to every sandboxed process", real, d)
			}
		}
		for _, d := range p.ReadOnly {
			if ro, ok := existing(d); ok && (fsutil.Within(ro, real) || fsutil.Within(real, ro)) {
				return nil, fmt.Errorf("cache folder %q overlaps %q, an extension's folder, which stays read-only to every sandboxed process", real, ro)
			}
		}
		add(real, true, false, "private cache")
	}
	scopeRoot := func(a string) (string, error) {
		var root string
		var err error
		switch a {
		case "workspace":
			root, err = filepath.EvalSymlinks(p.Workspace)
		case "home":
			root, err = filepath.EvalSymlinks(p.Home)
		case "full":
			root = "/"
		default:
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if a == "workspace" && p.Home != "" {
			if home := resolvePartly(p.Home); fsutil.Within(root, home) {
				return "", &HomeWorkspaceError{Workspace: root, Holds: root != home}
			}
		}
		for _, d := range protected {
			if fsutil.Within(d, root) {
				return "", fmt.Errorf("the %s scope %q is inside %q, which holds gemkit's configuration and other extensions and is closed to every tool; run the tool from another directory", a, root, d)
			}
		}
		return root, nil
	}
	read, err := scopeRoot(string(p.Read))
	if err != nil {
		return nil, fmt.Errorf("filesystem.read scope: %w", err)
	}
	if read != "" {
		// Other processes are not files of the user's: under "full"
		// the tool still sees only its own /proc entry and the machine
		// description files above.
		// Devices are never part of a scope: another terminal's
		// /dev/pts/N would give its keystrokes away.
		closed := append([]string{"/proc", "/dev"}, protected...)
		grants, ancestors, err := carve(read, closed)
		if err != nil {
			return nil, fmt.Errorf("splitting the readable scope around %s: %w", strings.Join(protected, ", "), err)
		}
		for _, a := range ancestors {
			// Below the scope's root, a folder can go between this
			// plan and the sandbox's start (another program's
			// temporary folder): then it is not there to list.
			rules = append(rules, PathRule{Path: a, ListOnly: true, Optional: a != read, Why: "filesystem.read=" + string(p.Read) + " (names only: leads to a closed folder)"})
		}
		for _, c := range grants {
			add(c.path, false, c.file, "filesystem.read="+string(p.Read))
			rules[len(rules)-1].Optional = c.path != read
		}
	}
	write, err := scopeRoot(string(p.Write))
	if err != nil {
		return nil, fmt.Errorf("filesystem.write scope: %w", err)
	}
	if write != "" {
		if fsutil.Within(ext, write) {
			return nil, fmt.Errorf("the %s scope %q is inside the extension's own folder %q, which its tools may never write; run the tool from another directory", p.Write, write, ext)
		}
		excl := append([]string{ext, "/proc", "/dev"}, protected...)
		for _, d := range p.ReadOnly {
			if real, ok := existing(d); ok {
				if fsutil.Within(real, write) {
					return nil, fmt.Errorf("the %s scope %q is inside %q, the folder of an installed or linked extension, which no tool may write; run the tool from another directory", p.Write, write, real)
				}
				if !fsutil.Within(write, real) {
					continue
				}
				if splitReadOnly {
					excl = append(excl, real)
				} else {
					*overlays = append(*overlays, overlay{path: real})
				}
			}
		}
		// The guarded paths (permission.ProtectedPaths). In a folder that
		// already leads to a closed one (~ under write: home) nothing
		// can be created, so leaving them out of the scope is enough;
		// elsewhere they are read-only binds over the writable one, and
		// one that is absent is given a placeholder (an empty file or
		// folder, by Launcher.Start) to bind over.
		base := append([]string(nil), excl...)
		// Sealing needs the write scope bound whole: one that leads to a
		// folder split out of it is not sealed.
		seal = seal && !splitReadOnly && !slices.ContainsFunc(excl, func(x string) bool { return fsutil.Within(write, x) })
		var sealedOut []string
		names := map[string]*sealedFolder{}
		folder := func(dir string) *sealedFolder {
			if names[dir] == nil {
				names[dir] = &sealedFolder{path: dir}
			}
			return names[dir]
		}
		for _, g := range p.Guarded {
			gp := filepath.Clean(g.Path)
			if !filepath.IsAbs(gp) || !fsutil.Within(write, gp) || gp == write {
				continue
			}
			parent, leads, inside := filepath.Dir(gp), false, false
			for _, x := range base {
				if fsutil.Within(x, gp) {
					inside = true
				}
				if x != parent && fsutil.Within(parent, x) {
					leads = true
				}
			}
			switch {
			case inside:
				continue
			case leads || splitReadOnly:
				// A pattern's folder is split too: it takes no new
				// names at all then.
				excl = append(excl, gp)
				continue
			case g.Pattern:
				if seal {
					f := folder(parent)
					f.patterns = append(f.patterns, filepath.Base(gp))
				}
				var keep []string
				for _, e := range p.Guarded {
					if ok, _ := filepath.Match(filepath.Base(gp), filepath.Base(e.Path)); ok && !e.Pattern && filepath.Dir(e.Path) == filepath.Dir(gp) {
						keep = append(keep, filepath.Base(e.Path))
					}
				}
				*overlays = append(*overlays, overlay{path: gp, guarded: true, pattern: true, why: g.Why(), keep: keep})
				continue
			}
			fi, err := os.Lstat(gp)
			if seal {
				f := folder(parent)
				f.names = append(f.names, filepath.Base(gp))
			}
			switch {
			case errors.Is(err, fs.ErrNotExist) && seal:
				// Out of the carve below, so that its folder is one of
				// the sealed ones.
				sealedOut = append(sealedOut, gp)
			case errors.Is(err, fs.ErrNotExist):
				*overlays = append(*overlays, overlay{path: gp, guarded: true, absent: true, dir: g.Dir})
			case err != nil:
				return nil, fmt.Errorf("%s must stay read-only for the tool: %w", gp, err)
			case fi.Mode()&os.ModeSymlink != 0:
				// A link is not a mount point; what it leads to is
				// guarded where it lies in the scope.
				if real, ok := existing(gp); ok && fsutil.Within(write, real) && real != write {
					*overlays = append(*overlays, overlay{path: real, guarded: true, dir: isDir(real)})
				}
			default:
				*overlays = append(*overlays, overlay{path: gp, guarded: true, dir: fi.IsDir()})
			}
		}
		grants, ancestors, err := carve(write, append(excl, sealedOut...))
		if err != nil {
			return nil, fmt.Errorf("splitting the writable scope around the extension folder: %w", err)
		}
		if len(sealedOut) > 0 {
			// The folders on the way to an absent protected name: bound
			// writable whole (the write scope's bind covers them), and
			// only read by the tool's own calls: the watch of its
			// writes makes, writes, renames and removes there what is
			// not protected (sealedFolder). Their files get no rule of
			// their own, which would follow a file renamed to a
			// protected name.
			for _, a := range ancestors {
				rules = append(rules, PathRule{Path: a, Write: true, NoCreate: true, Optional: a != write,
					Why: "filesystem.write=" + string(p.Write) + " (written through gemkit: it holds protected names)"})
				f := folder(a)
				*sealed = append(*sealed, *f)
			}
			grants = slices.DeleteFunc(grants, func(c carved) bool { return c.file && slices.Contains(ancestors, filepath.Dir(c.path)) })
		}
		for _, c := range grants {
			add(c.path, true, c.file, "filesystem.write="+string(p.Write))
			rules[len(rules)-1].Optional = c.path != write
		}
	}
	return rules, nil
}

type carved struct {
	path string
	file bool
}

// carve returns the paths that together cover root except the excluded
// paths: every subtree that holds no excluded path whole, and, inside the
// directories on the way to an excluded path (the ancestors, returned
// apart), their regular files and subdirectories one by one. Landlock
// rules only add access, so this is how a scope minus a folder is said.
// Symlinks and special files among the entries are skipped: a rule on a
// symlink would grant its target, and creating or removing entries needs
// rights on the parent, which an ancestor never gets.
func carve(root string, excludes []string) (grants []carved, ancestors []string, err error) {
	var walk func(dir string) error
	walk = func(dir string) error {
		leads := false
		for _, x := range excludes {
			if x == dir {
				return nil
			}
			if fsutil.Within(dir, x) {
				leads = true
			}
		}
		if !leads {
			grants = append(grants, carved{path: dir})
			return nil
		}
		ancestors = append(ancestors, dir)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrPermission) {
			// The user cannot list it (another user's /tmp/gemini): its
			// entries stay out of the scope, names only.
			return nil
		}
		if (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) && dir != root {
			// Gone since its parent was listed (another program's
			// temporary folder, a closed place found in it), or no
			// longer a folder: nothing there to show or to close.
			ancestors = ancestors[:len(ancestors)-1]
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			switch t := e.Type(); {
			case t.IsDir():
				if err := walk(path); err != nil {
					return err
				}
			case t.IsRegular():
				if !slices.Contains(excludes, path) {
					grants = append(grants, carved{path: path, file: true})
				}
			}
		}
		return nil
	}
	if err := walk(root); err != nil {
		return nil, nil, err
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i].path < grants[j].path })
	return grants, ancestors, nil
}

// resolvePartly resolves the symlinks of the longest existing prefix of
// path, so that a protected folder that does not exist yet is still named
// where it would be created.
func resolvePartly(path string) string {
	path = filepath.Clean(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		return real
	}
	dir := filepath.Dir(path)
	if dir == path {
		return path
	}
	return filepath.Join(resolvePartly(dir), filepath.Base(path))
}

func existing(path string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	return real, true
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// HomeWorkspaceError is a workspace scope refused because the workspace
// is the home folder, or holds it (Holds): a tool allowed the workspace
// would reach all of it. How the person names another workspace is the
// command's to add.
type HomeWorkspaceError struct {
	Workspace string
	Holds     bool
}

func (e *HomeWorkspaceError) Error() string {
	what := "your home folder"
	if e.Holds {
		what = "a folder that holds your home folder"
	}
	return fmt.Sprintf("the workspace %q is %s, so a tool allowed the workspace would reach all of it (~/.ssh, ~/.local/bin, ~/.config/autostart, every project); run it with a project folder as its workspace", e.Workspace, what)
}
