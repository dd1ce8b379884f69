package sandbox

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/sandbox/child"
)

// devices are the only device nodes a tool's /dev holds: no terminal
// (another session's /dev/pts/N would give its keystrokes away), no disk,
// no shared memory.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// devLinks are the symlinks of /dev that shells and runtimes use.
var devLinks = [][2]string{{"/dev/fd", "/proc/self/fd"}, {"/dev/stdin", "/proc/self/fd/0"}, {"/dev/stdout", "/proc/self/fd/1"}, {"/dev/stderr", "/proc/self/fd/2"}}

// mountPlan turns the Landlock rules into the second wall: the steps that
// build the tool's own root, where every readable path is a read-only bind
// and every writable one a writable bind, and nothing else exists. The
// private temp dir becomes a tmpfs of tmpSize bytes and DefaultTempInodes
// files inside the tool's mount namespace, /proc that of its own PID
// namespace and /dev only the harmless devices. links are paths (the program, the runtime, the
// scopes) whose symlinks are recreated, so that /bin/sh or /lib64's
// dynamic loader resolve as outside. overlays are folders inside a
// writable bind that are bound read-only over it (other extensions' code).
func mountPlan(rules []PathRule, overlays []overlay, tmp string, tmpSize uint64, links []string) []child.Mount {
	steps, done := ruleBinds(rules, tmp)
	steps = rebindOrder(steps, overlaySteps(overlays, done))
	steps = append(steps, systemSteps(tmp, tmpSize)...)
	return append(steps, symlinkSteps(links)...)
}

// pathDepth is how many folders deep p is: shallower binds go first.
func pathDepth(p string) int { return strings.Count(p, "/") }

// ruleBinds are the binds of the rules, shallowest first (read-only
// before writable at one path), leaving out /proc, /dev, the temporary
// folder and the root, which have steps of their own, and every rule a
// bind already made covers. done are the rules bound.
func ruleBinds(rules []PathRule, tmp string) (steps []child.Mount, done []PathRule) {
	var bound boundDirs
	for _, r := range bindOrder(rules, tmp) {
		if bound.cover(r) {
			continue
		}
		if r.ListOnly {
			steps = append(steps, child.Mount{Kind: child.MountDir, Path: r.Path})
			continue
		}
		steps = append(steps, child.Mount{Kind: child.MountBind, Path: r.Path, Write: r.Write, File: r.File, Optional: r.Optional})
		done = append(done, r)
		bound.add(r)
	}
	return steps, done
}

// bindOrder are the rules ruleBinds binds, in its order: all but /proc,
// /dev, the writable temporary folder and the root, shallowest first,
// read-only before writable at one path.
func bindOrder(rules []PathRule, tmp string) []PathRule {
	var binds []PathRule
	for _, r := range rules {
		switch {
		case fsutil.Within("/proc", r.Path), fsutil.Within("/dev", r.Path):
			continue // their own steps below
		case r.Path == tmp && r.Write:
			continue // a tmpfs below
		case r.Path == "/":
			continue
		}
		binds = append(binds, r)
	}
	sort.SliceStable(binds, func(i, j int) bool {
		a, b := binds[i], binds[j]
		if pathDepth(a.Path) != pathDepth(b.Path) {
			return pathDepth(a.Path) < pathDepth(b.Path)
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return !a.Write && b.Write
	})
	return binds
}

// boundDirs are the folders ruleBinds has bound, by cleaned path (true
// where writable), so that whether a bind made covers a rule is a look-up
// of the rule's own folders, as deep as its path, not a comparison with
// every bind made: a scope that reads all but a closed folder lists each
// folder above it, /tmp's hundreds of entries among them, and comparing
// each with all the others was most of a tool start's CPU there.
type boundDirs struct {
	abs map[string]bool // absolute folders: writable?
	rel []PathRule      // any other (Within compares them by Rel)
}

func (b *boundDirs) add(r PathRule) {
	if r.File || r.ListOnly {
		return
	}
	if !filepath.IsAbs(r.Path) {
		b.rel = append(b.rel, r)
		return
	}
	if b.abs == nil {
		b.abs = map[string]bool{}
	}
	p := filepath.Clean(r.Path)
	b.abs[p] = b.abs[p] || r.Write
}

// cover reports whether a folder bound holds r's path (or is it) and
// gives at least the access r asks for: what fsutil.Within of each bound
// folder and r's path would find.
func (b *boundDirs) cover(r PathRule) bool {
	for _, d := range b.rel {
		if fsutil.Within(d.Path, r.Path) && (d.Write || !r.Write) {
			return true
		}
	}
	if len(b.abs) == 0 || !filepath.IsAbs(r.Path) {
		return false
	}
	for p := filepath.Clean(r.Path); ; p = filepath.Dir(p) {
		if w, ok := b.abs[p]; ok && (w || !r.Write) {
			return true
		}
		if p == filepath.Dir(p) {
			return false
		}
	}
}

// overlaySteps are the overlays, and the folders between the writable
// bind and each overlay, which become mount points too (bound onto
// themselves): a mount point cannot be renamed, so the tool cannot move
// the protected folder away on the host and put its own in its place.
func overlaySteps(overlays []overlay, done []PathRule) []child.Mount {
	var extra []child.Mount
	between := map[string]bool{}
	for _, ov := range overlays {
		if ov.pattern {
			continue
		}
		o := ov.path
		var outer string
		for _, d := range done {
			if d.Write && !d.File && fsutil.Within(d.Path, o) && len(d.Path) > len(outer) {
				outer = d.Path
			}
		}
		// Inside a read-only bind (the tool's own extension folder, say)
		// nothing between may be bound writable again.
		inReadOnly := func(a string) bool {
			for _, d := range done {
				if !d.Write && !d.File && len(d.Path) > len(outer) && fsutil.Within(d.Path, a) {
					return true
				}
			}
			for _, x := range overlays {
				if fsutil.Within(x.path, a) && x.path != o && (!x.absent || x.dir) {
					return true
				}
			}
			return false
		}
		if outer != "" {
			for a := filepath.Dir(o); a != outer && fsutil.Within(outer, a); a = filepath.Dir(a) {
				if !between[a] && !inReadOnly(a) {
					between[a] = true
					extra = append(extra, child.Mount{Kind: child.MountBind, Path: a, Write: true, Optional: true})
				}
			}
		}
		file := !isDir(o)
		if ov.absent {
			file = !ov.dir
		}
		extra = append(extra, child.Mount{Kind: child.MountBind, Path: o, File: file, Optional: !ov.guarded})
	}
	return extra
}

// rebindOrder puts the rules' binds (steps) and the overlays' (extra) in
// the order they must be made. Each bind clones its path from the host's
// tree, covering whatever the new root had mounted at or beneath that
// path: shallower binds go first, and at one path the overlay after the
// folder bound onto itself. The binds of the rules inside a folder that
// is bound again follow it.
func rebindOrder(steps, extra []child.Mount) []child.Mount {
	rebound := func(p string) bool {
		for _, m := range extra {
			if m.Write && m.Path != p && fsutil.Within(m.Path, p) {
				return true
			}
		}
		return false
	}
	var kept []child.Mount
	for _, m := range steps {
		if m.Kind == child.MountBind && rebound(m.Path) {
			extra = append(extra, m)
			continue
		}
		kept = append(kept, m)
	}
	sort.SliceStable(extra, func(i, j int) bool {
		a, b := extra[i], extra[j]
		if pathDepth(a.Path) != pathDepth(b.Path) {
			return pathDepth(a.Path) < pathDepth(b.Path)
		}
		return a.Path == b.Path && a.Write && !b.Write
	})
	return append(kept, extra...)
}

// systemSteps are the tool's own temporary folder (a tmpfs of tmpSize),
// the /proc of its PID namespace, and only the harmless devices.
func systemSteps(tmp string, tmpSize uint64) []child.Mount {
	steps := []child.Mount{
		{Kind: child.MountTmpfs, Path: tmp, Size: tmpSize, Inodes: DefaultTempInodes},
		{Kind: child.MountProc, Path: "/proc"},
	}
	for _, d := range devices {
		if _, err := os.Stat(d); err == nil {
			steps = append(steps, child.Mount{Kind: child.MountBind, Path: d, File: true, Device: true, Write: true})
		}
	}
	for _, l := range devLinks {
		steps = append(steps, child.Mount{Kind: child.MountSymlink, Path: l[0], Target: l[1]})
	}
	return steps
}

// symlinkSteps recreates the symlinks met on the way to each path (and to
// their targets), for those that lie outside every bind.
func symlinkSteps(paths []string) []child.Mount {
	seen := map[string]bool{}
	var out []child.Mount
	// The paths share their first folders (a run's are a hundred): each
	// is looked at once.
	type look struct {
		fi  os.FileInfo
		err error
	}
	looked := map[string]look{}
	lstat := func(p string) (os.FileInfo, error) {
		l, ok := looked[p]
		if !ok {
			l.fi, l.err = os.Lstat(p)
			looked[p] = l
		}
		return l.fi, l.err
	}
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if depth > 40 || !filepath.IsAbs(p) {
			return
		}
		parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
		cur := "/"
		for i, part := range parts {
			if part == "" {
				continue
			}
			next := filepath.Join(cur, part)
			fi, err := lstat(next)
			if err != nil {
				return
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(next)
				if err != nil {
					return
				}
				if !seen[next] {
					seen[next] = true
					out = append(out, child.Mount{Kind: child.MountSymlink, Path: next, Target: target})
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(cur, target)
				}
				walk(filepath.Join(append([]string{target}, parts[i+1:]...)...), depth+1)
				return
			}
			cur = next
		}
	}
	for _, p := range paths {
		walk(p, 0)
	}
	return out
}
