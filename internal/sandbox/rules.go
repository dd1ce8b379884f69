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
// name but the protected ones (sealedwrites_linux.go).
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

// ruleSet is a policy's rules as rulesInto makes them, step by step, and
// what the launcher does beside them: the read-only binds over the write
// scope (overlays) and the folders whose writes gemkit makes (sealed).
type ruleSet struct {
	rules    []PathRule
	overlays *[]overlay
	sealed   *[]sealedFolder
	// splitReadOnly, seal: as rulesInto was asked.
	splitReadOnly, seal bool
	// res resolves the paths the rules name.
	res *resolver
}

// add adds a rule of path.
func (r *ruleSet) add(path string, write, file bool, why string) {
	r.rules = append(r.rules, PathRule{Path: path, Write: write, File: file, Why: why})
}

// addOptional adds a rule of path that the sandbox's start skips when
// path is gone by then.
func (r *ruleSet) addOptional(path string, write, file, optional bool, why string) {
	r.add(path, write, file, why)
	r.rules[len(r.rules)-1].Optional = optional
}

// rulesInto computes the policy's rules: what every tool reads of the
// system, its extension's folder and its own temporary and cache
// folders, then its read and write scopes, each split around what no
// tool may reach. The steps are in that order because a later one
// checks its folders against an earlier one's (a cache or a scope
// against the extension's folder).
func (p *Policy) rulesInto(splitReadOnly, seal bool, overlays *[]overlay, sealed *[]sealedFolder) ([]PathRule, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	r := &ruleSet{overlays: overlays, sealed: sealed, splitReadOnly: splitReadOnly, seal: seal, res: newResolver()}
	if err := p.systemRules(r); err != nil {
		return nil, err
	}
	ext, err := p.ownFolderRules(r)
	if err != nil {
		return nil, err
	}
	protected := make([]string, 0, len(p.Protected))
	for _, d := range p.Protected {
		real, _ := r.res.partly(d)
		protected = append(protected, real)
	}
	if err := p.cacheRules(r, ext, protected); err != nil {
		return nil, err
	}
	read, err := p.scopeRoot(r.res, string(p.Read), protected)
	if err != nil {
		return nil, fmt.Errorf("filesystem.read scope: %w", err)
	}
	if read != "" {
		if err := p.readRules(r, read, protected); err != nil {
			return nil, err
		}
	}
	write, err := p.scopeRoot(r.res, string(p.Write), protected)
	if err != nil {
		return nil, fmt.Errorf("filesystem.write scope: %w", err)
	}
	if write != "" {
		if err := p.writeRules(r, write, ext, protected); err != nil {
			return nil, err
		}
	}
	return r.rules, nil
}

// systemRules are what every tool reads of the system, whatever its
// scopes: the runtime's folders and files, the devices it writes, the
// machine's description, its own /proc entry, and the runtime
// installations the policy names (never a home's or the whole tree).
func (p *Policy) systemRules(r *ruleSet) error {
	for _, d := range systemReadDirs {
		if real, ok := r.res.existing(d); ok {
			r.add(real, false, false, "system runtime")
		}
	}
	for _, f := range systemReadFiles {
		if real, ok := r.res.existing(f); ok {
			r.add(real, false, true, "system runtime")
		}
	}
	for _, f := range systemWriteFiles {
		if real, ok := r.res.existing(f); ok {
			r.add(real, true, true, "device")
		}
	}
	for _, f := range systemInfo {
		if _, err := os.Stat(f.path); err == nil {
			r.addOptional(f.path, false, f.file, true, "machine description")
		}
	}
	// Not resolved here: "/proc/self" must be opened by the sandbox child,
	// whose pid the tool keeps across exec; resolved in gemkit it would
	// name gemkit's own entry.
	r.add("/proc/self", false, false, "the tool's own /proc entry")
	for _, rp := range p.RuntimePaths {
		real, ok := r.res.existing(rp)
		if !ok {
			continue
		}
		if real == "/" || p.Home != "" && fsutil.Within(real, filepath.Clean(p.Home)) {
			return fmt.Errorf("runtime installation %q would expose all of %q; refusing", rp, real)
		}
		r.add(real, false, !isDir(real), "runtime installation")
	}
	return nil
}

// ownFolderRules are the extension's own folder, read-only, and the
// tool's private temporary folder, which must not be inside it. It
// returns the extension's folder resolved.
func (p *Policy) ownFolderRules(r *ruleSet) (ext string, err error) {
	ext, err = filepath.EvalSymlinks(p.ExtensionDir)
	if err != nil {
		return "", fmt.Errorf("extension folder: %w", err)
	}
	r.add(ext, false, false, "the extension's own folder (read-only)")
	tmp, err := filepath.EvalSymlinks(p.TempDir)
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	if fsutil.Within(ext, tmp) {
		return "", fmt.Errorf("temp dir %q is inside the extension folder", tmp)
	}
	r.add(tmp, true, false, "private temp dir")
	return ext, nil
}

// cacheRules are the tool's private caches, writable: each a folder that
// overlaps neither the extension's folder, nor a closed one, nor another
// extension's.
func (p *Policy) cacheRules(r *ruleSet, ext string, protected []string) error {
	for _, c := range p.Caches {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			return fmt.Errorf("cache folder: %w", err)
		}
		if !isDir(real) {
			return fmt.Errorf("cache folder %q is not a folder", c)
		}
		if real == "/" || fsutil.Within(real, ext) || fsutil.Within(ext, real) {
			return fmt.Errorf("cache folder %q overlaps the program's own folder %q, which stays read-only", real, ext)
		}
		for _, d := range protected {
			if fsutil.Within(d, real) || fsutil.Within(real, d) {
				return fmt.Errorf("cache folder %q overlaps %q, which is closed to every sandboxed process", real, d)
			}
		}
		for _, d := range p.ReadOnly {
			if ro, ok := r.res.existing(d); ok && (fsutil.Within(ro, real) || fsutil.Within(real, ro)) {
				return fmt.Errorf("cache folder %q overlaps %q, an extension's folder, which stays read-only to every sandboxed process", real, ro)
			}
		}
		r.add(real, true, false, "private cache")
	}
	return nil
}

// scopeRoot is the folder a scope (filesystem.read or .write) names,
// resolved, or "" for none: never a folder that holds the home, nor one
// inside a closed folder.
func (p *Policy) scopeRoot(res *resolver, a string, protected []string) (string, error) {
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
		if home, _ := res.partly(p.Home); fsutil.Within(root, home) {
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

// readRules are the read scope rooted at read, split around the closed
// folders: other processes are not files of the user's (under "full"
// the tool still sees only its own /proc entry and the machine
// description files), and devices are never part of a scope (another
// terminal's /dev/pts/N would give its keystrokes away).
func (p *Policy) readRules(r *ruleSet, read string, protected []string) error {
	closed := append([]string{"/proc", "/dev"}, protected...)
	grants, ancestors, err := carve(read, closed)
	if err != nil {
		return fmt.Errorf("splitting the readable scope around %s: %w", strings.Join(protected, ", "), err)
	}
	for _, a := range ancestors {
		// Below the scope's root, a folder can go between this
		// plan and the sandbox's start (another program's
		// temporary folder): then it is not there to list.
		r.rules = append(r.rules, PathRule{Path: a, ListOnly: true, Optional: a != read, Why: "filesystem.read=" + string(p.Read) + " (names only: leads to a closed folder)"})
	}
	for _, c := range grants {
		r.addOptional(c.path, false, c.file, c.path != read, "filesystem.read="+string(p.Read))
	}
	return nil
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

// resolver resolves paths as filepath.EvalSymlinks does, for the rules
// of one run, looking at each folder once: those rules resolve a hundred
// paths (the closed places, most of which do not exist) that share their
// first folders, which EvalSymlinks looks at again for each, and a
// closed path under a missing folder again at every level up. What it
// found is as old as the rules it makes.
type resolver struct {
	seen map[string]resolved
}

// resolved is a path as the resolver resolved it: real, its symbolic
// links resolved as far as it exists, and whether it exists (a dangling
// link does not).
type resolved struct {
	real   string
	exists bool
}

func newResolver() *resolver { return &resolver{seen: map[string]resolved{}} }

// partly resolves the symbolic links of the longest existing prefix of
// path, so that a protected folder that does not exist yet is still named
// where it would be created, and reports whether all of path exists.
func (r *resolver) partly(path string) (string, bool) {
	path = filepath.Clean(path)
	if v, ok := r.seen[path]; ok {
		return v.real, v.exists
	}
	v := r.resolve(path)
	r.seen[path] = v
	return v.real, v.exists
}

func (r *resolver) resolve(path string) resolved {
	dir := filepath.Dir(path)
	if dir == path {
		return resolved{real: path, exists: true}
	}
	base := filepath.Base(path)
	realDir, ok := r.partly(dir)
	joined := filepath.Join(realDir, base)
	if !ok {
		// Under a folder that does not exist: nothing to resolve.
		return resolved{real: joined}
	}
	fi, err := os.Lstat(joined)
	if err != nil {
		return resolved{real: joined}
	}
	if fi.Mode()&os.ModeSymlink == 0 {
		return resolved{real: joined, exists: true}
	}
	// A link, resolved where it lies (its folder resolved already); one
	// that leads nowhere is named as it is.
	if real, err := filepath.EvalSymlinks(joined); err == nil {
		return resolved{real: real, exists: true}
	}
	return resolved{real: joined}
}

// existing resolves path as filepath.EvalSymlinks does, and reports
// whether it exists.
func (r *resolver) existing(path string) (string, bool) {
	real, ok := r.partly(path)
	if !ok {
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
