package hookclient

import (
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/gemkit/gemkit/internal/proc/peercred"
)

// init hands a run of `gemkit extensions hook` to its warm sandbox, if
// one waits, before the rest of the program initializes, and exits with
// the run's code. Without one it returns, and the command runs the cold
// way. Go initializes a package once everything it imports is, the
// lexically first of those ready first. The package imports only the
// standard library's lowest parts (os, syscall, strconv, slices,
// crypto/sha256) and procstat and runtimedir, which import no more:
// neither reflect (fmt, encoding/json, encoding/hex) nor unicode's
// tables (strings, bytes), which sort after this package's path. So it
// is ready, and run, before every package that waits for those (the
// encoding/gob, encoding/json and fmt of gemkit's dependencies among
// them), not after all of them, as it was with fmt and encoding/json.
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
	id, err := Identity(pid, start, cwd, os.Environ(), args)
	if err != nil {
		return 0, false
	}
	dir := Dir()
	if !private(dir) {
		return 0, false
	}
	code, refused, err := run(Socket(dir, KeyOf(id)), id)
	switch {
	case errors.Is(err, errNotTaken):
		return 0, false
	case err != nil:
		os.Stderr.WriteString("gemkit: gemkit ran the hook in its warm sandbox, which then ended: " + err.Error() + "\n")
		return 1, true
	case refused != "":
		os.Stderr.WriteString("gemkit: gemkit did not run the hook: " + refused + "\n")
		return 1, true
	}
	return code, true
}

// private says whether dir is a folder of this user's that no one else
// may enter (gemkitdir.MakeRuntime makes it so; a client only finds it).
func private(dir string) bool {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == os.Getuid() && st.Mode&0o077 == 0
}

var errNotTaken = errors.New("no warm sandbox took the run")

// run is the conversation with the server at path: the request (with
// the run's identity id) and the three descriptors, its
// acknowledgment, its answer. The server must run
// as this user (SO_PEERCRED).
func run(path string, id []byte) (code int, refused string, err error) {
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
	cred, err := peercred.FD(fd)
	if err != nil || cred.UID != os.Getuid() {
		return 0, "", errNotTaken
	}
	rights := syscall.UnixRights(0, 1, 2)
	req := RequestOf(id)
	var n int
	for {
		n, err = syscall.SendmsgN(fd, req, rights, nil, 0)
		if err != syscall.EINTR {
			break
		}
	}
	// The rest of a long request (the descriptors went with the first
	// part).
	for err == nil && n < len(req) {
		var m int
		if m, err = syscall.Write(fd, req[n:]); err == syscall.EINTR {
			err = nil
		}
		n += max(m, 0)
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
	ans, err := DecodeAnswer(raw)
	if err != nil {
		return 0, "", err
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
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return u(uint64(st.Dev)) + ":" + u(st.Ino) + ":" + strconv.FormatInt(st.Size, 10) + ":" + strconv.FormatInt(int64(st.Mtim.Sec), 10) + "." + strconv.FormatInt(int64(st.Mtim.Nsec), 10), true
}
