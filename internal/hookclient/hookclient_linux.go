package hookclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// init hands a run of `gemkit extensions hook` to its warm sandbox, if
// one waits, before the rest of the program initializes, and exits with
// the run's code. Without one it returns, and the command runs the cold
// way. Go initializes a package once everything it imports is, the
// lexically first of those ready first: the package imports only early
// parts of the standard library and procstat (not x/sys/unix, net or
// package proc, which come after most of gemkit's dependencies), so it
// runs right after the standard library's "encoding/..." and "flag".
func init() {
	args := os.Args[1:]
	if len(args) < 2 || args[0] != "extensions" || args[1] != "hook" {
		return
	}
	if code, ok := Run(args); ok {
		os.Exit(code)
	}
}

// Run hands the run of `gemkit args` to its warm sandbox, if one waits
// and takes it, with this process's standard streams, and returns the
// exit code to end with once the hook has ended (having said on stderr
// why, for a refusal or a server that ended mid-run); ok is false when
// no warm sandbox took it and nothing of it has run.
func Run(args []string) (code int, ok bool) {
	for _, a := range args {
		if a == "--" || a == "--warm-serve" || len(a) > 13 && a[:13] == "--warm-serve=" {
			return 0, false
		}
	}
	pid, start, err := Session()
	if err != nil {
		return 0, false
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 0, false
	}
	key, err := Key(pid, start, cwd, os.Environ(), args)
	if err != nil {
		return 0, false
	}
	dir := Dir()
	if !private(dir) {
		return 0, false
	}
	code, refused, err := run(Socket(dir, key))
	switch {
	case errors.Is(err, errNotTaken):
		return 0, false
	case err != nil:
		fmt.Fprintf(os.Stderr, "gemkit: gemkit ran the hook in its warm sandbox, which then ended: %v\n", err)
		return 1, true
	case refused != "":
		fmt.Fprintf(os.Stderr, "gemkit: gemkit did not run the hook: %s\n", refused)
		return 1, true
	}
	return code, true
}

// private says whether dir is a folder of this user's that no one else
// may enter (lspbroker.Dir makes it so; a client only finds it).
func private(dir string) bool {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == os.Getuid() && st.Mode&0o077 == 0
}

var errNotTaken = errors.New("no warm sandbox took the run")

// run is the conversation with the server at path: the request and the
// three descriptors, its acknowledgment, its answer. The server must run
// as this user (SO_PEERCRED).
func run(path string) (code int, refused string, err error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, "", errNotTaken
	}
	defer syscall.Close(fd)
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, "", errNotTaken
	}
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil || int(cred.Uid) != os.Getuid() {
		return 0, "", errNotTaken
	}
	rights := syscall.UnixRights(0, 1, 2)
	for {
		err = syscall.Sendmsg(fd, []byte{Request}, rights, nil, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, "", errNotTaken
	}
	r := fdReader(fd)
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil || b[0] != Claimed {
		return 0, "", errNotTaken
	}
	raw, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return 0, "", err
	}
	var ans Answer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return 0, "", errors.New("the warm sandbox ended without saying how the hook ended")
	}
	return ans.Code, ans.Refused, nil
}

// fdReader reads a blocking descriptor, again after EINTR.
type fdReader int

func (f fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// fileID is a file's identity: device, inode, size and change times.
func fileID(fi os.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec), true
}
