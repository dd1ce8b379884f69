package permission

import (
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/internal/proc"
)

// writers looks at the listening sockets and, for those of this user on
// loopback or on every address whose process it has not seen yet, finds
// the process (its descriptors in /proc) and reads its environment.
func (l *Locator) writers() []Env {
	socks, err := proc.TCPSockets(proc.Query{States: 1 << proc.TCPListen})
	if err != nil {
		return nil
	}
	uid := uint32(os.Geteuid())
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byInode == nil {
		l.byInode = map[uint64]*Env{}
	}
	live := make(map[uint64]bool, len(socks))
	var unknown []uint64
	for _, s := range socks {
		if a := s.Local.Addr(); s.UID != uid || !(a.IsLoopback() || a.IsUnspecified()) {
			continue
		}
		live[s.Inode] = true
		if _, ok := l.byInode[s.Inode]; !ok {
			unknown = append(unknown, s.Inode)
		}
	}
	for ino := range l.byInode {
		if !live[ino] {
			delete(l.byInode, ino)
		}
	}
	if len(unknown) > 0 {
		found := owners(unknown)
		for _, ino := range unknown {
			l.byInode[ino] = found[ino]
		}
	}
	var out []Env
	seen := map[*Env]bool{}
	for _, e := range l.byInode {
		if e != nil && !seen[e] {
			seen[e] = true
			out = append(out, *e)
		}
	}
	return out
}

// owners finds the processes of this user that hold the sockets inodes
// (proc.SocketOwners) and reads their environments; a socket whose
// process cannot be seen (another PID namespace, gone meanwhile) has none.
func owners(inodes []uint64) map[uint64]*Env {
	uid := uint32(os.Geteuid())
	pids := proc.SocketOwners(inodes, func(pid int) bool {
		u, err := proc.UID(pid)
		return err == nil && u == uid
	})
	found := map[uint64]*Env{}
	byPid := map[int]*Env{}
	for ino, pid := range pids {
		env, ok := byPid[pid]
		if !ok {
			if e, err := processEnv(pid); err == nil {
				env = &e
			}
			byPid[pid] = env
		}
		if env != nil {
			found[ino] = env
		}
	}
	return found
}

// processEnv reads a process's environment as it started, and its
// working folder, from which it takes a relative home variable.
func processEnv(pid int) (Env, error) {
	list, err := proc.Environ(pid)
	if err != nil {
		return Env{}, err
	}
	e := envOfList(list)
	if cwd, err := proc.Cwd(pid); err == nil && filepath.IsAbs(cwd) {
		e.Dir = cwd
	}
	return e, nil
}
