package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/proc"
)

// cgroup is the memory (and process) bound of one tool's whole process
// tree: a cgroup gemkit creates beneath its own, where the machine lets
// it (cgroup v2 delegated to the user, or a writable v1 memory
// controller). Everything the tree uses is charged there whatever its
// kind: heap, shared and file-backed mappings, memfds, its tmpfs, page
// cache, kernel memory of its own; past the limit the kernel reclaims and
// then kills inside the group only.
type cgroup struct {
	version string   // "v1" or "v2"
	dirs    []string // created cgroups, removed after the run
	procs   []string // their cgroup.procs files
	// tasks are their tasks files, v1's only: the child joins through
	// them itself (joinFiles).
	tasks []string
	// swapBounded: the tree's swap is bounded with its memory (the
	// swap file written, or no swap on the machine). Without it, each
	// process's data rlimit stays the bound of what it may push to swap
	// (childSpec).
	swapBounded bool
	unset       []string // the optional files make could not write
}

// newCgroup creates the cgroup of one run with memory limit bytes and at
// most procs processes (0: no process bound, where the PID namespace's
// pid_max bounds them already), or says why it cannot. v2 is tried first (a
// delegated subtree with the memory controller enabled), then v1.
func newCgroup(bytes uint64, procs int) (*cgroup, error) {
	return findCgroups().create(bytes, procs)
}

// cgroupLayout is where this process's cgroups are: found once per
// Launcher, since reading mountinfo costs more than making the cgroup.
type cgroupLayout struct {
	v2  string
	v1  map[string]string
	own map[string]string
}

func findCgroups() *cgroupLayout {
	// Unreadable, they leave the layout empty: no cgroup is made, and
	// RLIMIT_DATA bounds each process alone.
	v2, v1, _ := proc.CgroupMounts(os.Getpid(), "memory", "pids")
	own, _ := proc.Cgroups(os.Getpid())
	if own == nil {
		own = map[string]string{}
	}
	return &cgroupLayout{v2: v2, v1: v1, own: own}
}

func (lay *cgroupLayout) create(bytes uint64, procs int) (*cgroup, error) {
	v2, v1, own := lay.v2, lay.v1, lay.own
	name := "gemkit-tool-" + randomHex()
	var errs []string
	if v2 != "" {
		if rel, ok := own[""]; ok {
			// Beneath gemkit's own cgroup when the memory controller is
			// delegated there; else (root, a cgroup whose controllers
			// are taken by its own processes) beneath the hierarchy's
			// root, which enables them for its children.
			for _, parent := range uniq(filepath.Join(v2, rel), v2) {
				ctl, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
				if !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " memory ") {
					errs = append(errs, "cgroup v2: the memory controller is not delegated to "+parent)
					continue
				}
				cg := &cgroup{version: "v2"}
				files := map[string]string{"memory.max": strconv.FormatUint(bytes, 10), "memory.swap.max": "0"}
				if procs > 0 {
					files["pids.max"] = strconv.Itoa(procs)
				}
				err := cg.make(filepath.Join(parent, name), files, "memory.max")
				if err == nil {
					cg.boundSwap("memory.swap.max")
					return cg, nil
				}
				errs = append(errs, "cgroup v2: "+err.Error())
			}
		}
	}
	if root, ok := v1["memory"]; ok {
		cg := &cgroup{version: "v1"}
		dir := filepath.Join(root, own["memory"], name)
		s := strconv.FormatUint(bytes, 10)
		err := cg.make(dir, map[string]string{"memory.limit_in_bytes": s, "memory.memsw.limit_in_bytes": s}, "memory.limit_in_bytes")
		if err == nil {
			cg.boundSwap("memory.memsw.limit_in_bytes")
			if proot, ok := v1["pids"]; ok && procs > 0 {
				// The process bound is a bonus here: the PID
				// namespace's pid_max bounds processes already.
				if err := cg.make(filepath.Join(proot, own["pids"], name), map[string]string{"pids.max": strconv.Itoa(procs)}, "pids.max"); err != nil {
					cg.remove()
					cg = &cgroup{version: "v1"}
					_ = cg.make(dir, map[string]string{"memory.limit_in_bytes": s, "memory.memsw.limit_in_bytes": s}, "memory.limit_in_bytes")
					cg.boundSwap("memory.memsw.limit_in_bytes")
				}
			}
			return cg, nil
		}
		errs = append(errs, "cgroup v1: "+err.Error())
	}
	if len(errs) == 0 {
		errs = append(errs, "no cgroup memory controller is mounted")
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

// make creates dir and writes the files; only required must succeed
// (memsw exists only with swap accounting).
func (cg *cgroup) make(dir string, files map[string]string, required string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	cg.dirs = append(cg.dirs, dir)
	for _, name := range []string{required} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(files[name]), 0); err != nil {
			cg.remove()
			return fmt.Errorf("setting %s: %w", name, err)
		}
	}
	for name, v := range files {
		if name != required {
			if os.WriteFile(filepath.Join(dir, name), []byte(v), 0) != nil {
				cg.unset = append(cg.unset, name)
			}
		}
	}
	cg.procs = append(cg.procs, filepath.Join(dir, "cgroup.procs"))
	if cg.version == "v1" {
		cg.tasks = append(cg.tasks, filepath.Join(dir, "tasks"))
	}
	return nil
}

// joinFiles opens the files through which the child moves itself into
// the cgroup (child.Spec.Join): a v1 group's tasks file, to which a
// thread writes "0" to move itself. The kernel moves a thread that
// moves itself without the global lock (cgroup_threadgroup_rwsem) that
// a move of another process by its pid takes (add), whose write side
// waits for an RCU grace period: 11 to 29 ms here, quiet, where the
// move of itself took 0.03 to 0.1 ms. The thread that moves is the one
// that execs the tool, so the tool, and all it starts, is inside, as
// with add; what stays out is the child's other threads, which the
// exec ends. The files are opened here, with gemkit's rights (the
// kernel checks a move against the opener's), and nil is returned where
// there are none (v2, whose cgroup.procs moves whole processes only)
// or one cannot be opened: the parent then moves the child (add).
func (cg *cgroup) joinFiles() []*os.File {
	if len(cg.tasks) == 0 || len(cg.tasks) != len(cg.procs) {
		return nil
	}
	var files []*os.File
	for _, p := range cg.tasks {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			closeFiles(files)
			return nil
		}
		files = append(files, f)
	}
	return files
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// add moves the process pid (and the threads it has) into the cgroup;
// everything it starts afterwards stays there.
func (cg *cgroup) add(pid int) error {
	for _, p := range cg.procs {
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("sandbox: moving the tool into its cgroup: %w", err)
		}
	}
	return nil
}

// oomKilled reports whether the kernel killed a process of the group for
// going past its memory limit.
func (cg *cgroup) oomKilled() bool {
	if len(cg.dirs) == 0 {
		return false
	}
	name := "memory.events"
	if cg.version == "v1" {
		name = "memory.oom_control"
	}
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], name))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
			return true
		}
	}
	return false
}

// remove deletes the cgroups once their processes are gone (the kernel
// may take a moment to release a group whose last process just died).
func (cg *cgroup) remove() error {
	var errs []error
	for i := len(cg.dirs) - 1; i >= 0; i-- {
		var err error
		for try := 0; try < 1000; try++ {
			err = os.Remove(cg.dirs[i])
			if err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	cg.dirs = nil
	return errors.Join(errs...)
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// boundSwap records whether the group bounds its swap: its swap file
// (file) written, or no swap on the machine now, which is read only when
// the file could not be written.
func (cg *cgroup) boundSwap(file string) {
	cg.swapBounded = !slices.Contains(cg.unset, file)
	if !cg.swapBounded {
		n, err := proc.SwapBytes()
		cg.swapBounded = err == nil && n == 0
	}
}
