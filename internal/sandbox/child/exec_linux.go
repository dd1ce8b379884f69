package child

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// toolExec is the child's last step, prepared in full before it is
// taken: the resource limits, the word Ready to the parent, and the exec
// of the tool. The memory bound (RLIMIT_DATA) counts what the child has
// written of its own already (about 100 MB for gemkit as it waits for
// its spec, some 400 MB for a race-enabled build), so once it is set,
// any new mapping the child's own runtime makes fails: a heap that
// grows, the race detector's next trace block. Either ends the child
// with a fatal error the parent is not told of. So everything is set before the limits: the exec's C strings, the
// limits' values, the buffer of a failure's message; and take runs no
// Go code that allocates, or that the race detector records, between
// the limits and the exec.
type toolExec struct {
	name   string
	path   *byte
	argv   []*byte
	env    []*byte
	limits []rlimitSetting
	// msg holds the failure's message, built without allocating.
	msg []byte
}

type rlimitSetting struct {
	res uintptr
	rl  unix.Rlimit
}

// prepareExec makes spec's exec ready to take.
func prepareExec(spec Spec) (*toolExec, error) {
	e := toolExec{name: spec.Path}
	var err error
	if e.path, err = syscall.BytePtrFromString(spec.Path); err != nil {
		return nil, fmt.Errorf("starting %s: %w", spec.Path, err)
	}
	if e.argv, err = syscall.SlicePtrFromStrings(spec.Argv); err != nil {
		return nil, fmt.Errorf("starting %s: arguments: %w", spec.Path, err)
	}
	if e.env, err = syscall.SlicePtrFromStrings(spec.Env); err != nil {
		return nil, fmt.Errorf("starting %s: environment: %w", spec.Path, err)
	}
	e.limits = limits(spec)
	e.msg = make([]byte, 0, 1+len("starting ")+len(spec.Path)+256)
	return &e, nil
}

// limits are the resource limits, never above what gemkit itself runs
// under: no core files, a bound on open files, FileBytes on each file
// written (RLIMIT_FSIZE), and MemoryBytes on what
// each process can write of its own (RLIMIT_DATA: its heap, thread
// stacks, private writable mappings, counted when they become writable)
// and on how far its main stack may grow (RLIMIT_STACK's hard limit; the
// soft one, which decides the layout of its mappings, is kept). The
// parent asks for them (MemoryBytes above 0) only where no memory cgroup
// bounds the whole tree; they are then the bound of each process. The
// address space is not bounded (RLIMIT_AS): runtimes reserve far more
// of it than they use (V8 10 GiB of guard region for each
// WebAssembly memory, a JVM its whole heap), so a bound that let them run
// would bound nothing, and one that bounds would kill them (Node's fetch
// parses HTTP in WebAssembly). Reserved, inaccessible memory costs
// nothing; the seccomp filter refuses the one private writable mapping
// RLIMIT_DATA does not count (MAP_GROWSDOWN).
func limits(spec Spec) []rlimitSetting {
	type limit struct {
		res      int
		cur, max uint64 // cur RLIM_INFINITY: the current soft limit, under max
	}
	want := []limit{{unix.RLIMIT_CORE, 0, 0}, {unix.RLIMIT_NOFILE, MaxOpenFiles, MaxOpenFiles}}
	if spec.MemoryBytes > 0 {
		want = append(want, limit{unix.RLIMIT_DATA, spec.MemoryBytes, spec.MemoryBytes},
			limit{unix.RLIMIT_STACK, unix.RLIM_INFINITY, spec.MemoryBytes})
	}
	if spec.FileBytes > 0 {
		want = append(want, limit{unix.RLIMIT_FSIZE, spec.FileBytes, spec.FileBytes})
	}
	out := make([]rlimitSetting, 0, len(want))
	for _, l := range want {
		var cur unix.Rlimit
		if err := unix.Getrlimit(l.res, &cur); err == nil {
			// Never raise a limit gemkit itself runs under.
			l.max = min(l.max, cur.Max)
			if l.cur == unix.RLIM_INFINITY {
				l.cur = cur.Cur
			}
		}
		l.cur = min(l.cur, l.max)
		out = append(out, rlimitSetting{res: uintptr(l.res), rl: unix.Rlimit{Cur: l.cur, Max: l.max}})
	}
	return out
}

// take sets the limits, tells the parent the sandbox is in place, and
// execs the tool. It returns only if one of those failed, having sent
// the parent the reason (errReported).
//
// It makes raw system calls only, on data made beforehand, and is not
// instrumented by the race detector (go:norace; syscall.RawSyscall and
// RawSyscall6 are not either). Go's own syscall.Exec would allocate the
// C strings here, and it takes the runtime's lock that keeps threads
// from being created during an exec, for the sake of set-user-ID
// programs (Go issue 19546), which no_new_privs makes moot here.
//
//go:norace
func (e *toolExec) take() error {
	for i := range e.limits {
		l := &e.limits[i]
		if _, _, errno := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, l.res, uintptr(unsafe.Pointer(&l.rl)), 0, 0, 0); errno != 0 {
			e.fail("sandbox child: setrlimit: ", "", errno)
			return errReported
		}
	}
	ready := [1]byte{Ready}
	if _, _, errno := syscall.RawSyscall(unix.SYS_WRITE, FD, uintptr(unsafe.Pointer(&ready[0])), 1); errno != 0 {
		e.fail("sandbox child: ", "", errno)
		return errReported
	}
	_, _, errno := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(e.path)),
		uintptr(unsafe.Pointer(&e.argv[0])), uintptr(unsafe.Pointer(&e.env[0])))
	e.fail("starting ", e.name, errno)
	return errReported
}

// errReported is a failure whose reason the parent has been sent.
var errReported = errors.New("sandbox child: failed (the parent has been told why)")

// fail sends the parent what failed, in the buffer made for it (appends
// within its capacity allocate nothing; an errno's text is a constant).
//
//go:norace
func (e *toolExec) fail(what, path string, errno syscall.Errno) {
	msg := append(e.msg[:0], 'E')
	msg = append(msg, what...)
	if path != "" {
		msg = append(msg, path...)
		msg = append(msg, ": "...)
	}
	msg = append(msg, errno.Error()...)
	syscall.RawSyscall(unix.SYS_WRITE, FD, uintptr(unsafe.Pointer(&msg[0])), uintptr(len(msg)))
}
