// Package hookclient is the client side of a switched hook's warm
// sandbox (package exthook's Serve), kept apart so that `gemkit
// extensions hook` can hand its run over before the rest of gemkit
// initializes: a hook runs at every tool call, and most of a warm run's
// cost in the client was the binary's start (package initialisation,
// the command tree, the extension store's reads), none of which the
// handover needs.
//
// The warm sandbox is found by a key of what the client knows without
// reading anything of gemkit's: its arguments, environment and folder,
// the binary, the user and the session (Key). The server, which was
// started by a run with the same key, reads the store at each run and
// serves it only while what the store says of the hook (its command,
// settings, widening, folder) is what its sandbox was set up for;
// otherwise it leaves the run unclaimed and ends, and the run goes the
// cold way, which reads everything itself.
package hookclient

import (
	"errors"
	"hash/fnv"
	"os"
	"slices"
	"strconv"

	"github.com/gemkit/gemkit/internal/gemkitdir/runtimedir"
	"github.com/gemkit/gemkit/internal/proc/procstat"
)

// Words of the protocol: the client's request (its three descriptors
// come with it), the server's acknowledgment once it has taken them
// (before it the client may still run the hook itself; after it, the
// run is the server's), then one JSON answer (Answer).
const (
	Request = 'H'
	Claimed = 'C'
)

// Answer is how a warm run ended: its exit code, or the words of a
// refusal (the command did not run).
type Answer struct {
	Code    int
	Refused string
}

// Encode is a's words on the socket: the code in decimal, a newline,
// then the refusal's words (both ends are the same binary: the key
// names it).
func (a Answer) Encode() []byte {
	return []byte(strconv.Itoa(a.Code) + "\n" + a.Refused)
}

// DecodeAnswer reads the words Encode wrote.
func DecodeAnswer(b []byte) (Answer, error) {
	i := 0
	for i < len(b) && b[i] != '\n' {
		i++
	}
	code, err := strconv.Atoi(string(b[:i]))
	if err != nil || i == len(b) {
		return Answer{}, errors.New("the warm sandbox ended without saying how the hook ended")
	}
	return Answer{Code: code, Refused: string(b[i+1:])}, nil
}

// shells are the programs between Gemini CLI and gemkit's hook.
var shells = map[string]bool{"bash": true, "sh": true, "dash": true, "zsh": true}

// Session is the pid and start time (clock ticks after boot) of the
// process a warm sandbox lives no longer than: the nearest ancestor of
// this process that is not a shell (Gemini CLI, which runs a hook
// through bash -c).
func Session() (pid int, start uint64, err error) {
	pid = os.Getppid()
	for i := 0; i < 4 && pid > 1; i++ {
		st, err := procstat.Read(pid)
		if err != nil {
			return 0, 0, err
		}
		if !shells[st.Comm] {
			break
		}
		pid = st.PPid
	}
	if pid <= 1 {
		return 0, 0, errors.New("no session: gemkit's parent is gone")
	}
	st, err := procstat.Read(pid)
	if err != nil {
		return 0, 0, err
	}
	return pid, st.Start, nil
}

// shellKept are the variables a shell keeps for itself (its folders
// and depth, the last command), which a shell that runs hooks one after
// the other changes between them; no run reads them (the hook's folder
// is gemkit's own working folder, in the key), so they are not in it.
var shellKept = map[string]bool{"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true}

// Identity is what names the warm sandbox of a run of `gemkit args` in
// the folder cwd with the environment env, in the session (pid, start):
// all of them, the binary (by its file's identity) and the user, each
// word prefixed by its length. What the extension store says of the hook
// is not in it: the server compares that at each run, and consent too.
// The client sends it with its request, and the server serves only a
// run whose identity is the very one its sandbox was set up for.
func Identity(pid int, start uint64, cwd string, env, args []string) ([]byte, error) {
	var exe, err = os.Stat("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	id, ok := fileID(exe)
	if !ok {
		return nil, errors.New("the binary's identity is unknown")
	}
	var kept []string
	for _, kv := range env {
		k := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				k = kv[:i]
				break
			}
		}
		if !shellKept[k] {
			kept = append(kept, kv)
		}
	}
	slices.Sort(kept)
	var b []byte
	word := func(s string) { b = append(append(append(b, strconv.Itoa(len(s))...), ':'), s...) }
	word("gemkit warm hook 3")
	word(id)
	word(strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid()) + ":" + strconv.Itoa(pid) + ":" + strconv.FormatUint(start, 10))
	word(cwd)
	word(strconv.Itoa(len(kept)))
	for _, kv := range kept {
		word(kv)
	}
	word(strconv.Itoa(len(args)))
	for _, a := range args {
		word(a)
	}
	return b, nil
}

// MaxIdentity bounds the identity a server reads: more than the
// kernel lets a process's arguments and environment be.
const MaxIdentity = 8 << 20

// KeyOf is the name of the socket of the warm sandbox of the run whose
// identity is id: a digest of it (FNV-1a, 128 bits). A name found is
// not trusted: the server compares the whole identity, so the digest
// needs no strength, and crypto/sha256 would make this package wait for
// most of the standard library's initialisation (see init).
func KeyOf(id []byte) string {
	d := fnv.New128a()
	d.Write(id)
	return hexString(d.Sum(nil))
}

// Key is KeyOf(Identity(...)).
func Key(pid int, start uint64, cwd string, env, args []string) (string, error) {
	id, err := Identity(pid, start, cwd, env, args)
	if err != nil {
		return "", err
	}
	return KeyOf(id), nil
}

// RequestOf is the client's request with its identity: the word Request,
// the identity's length (4 bytes, big-endian), the identity.
func RequestOf(id []byte) []byte {
	n := len(id)
	return append([]byte{Request, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, id...)
}

// hexString is b in lower-case hexadecimal (encoding/hex imports fmt:
// see init).
func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}

// Socket is the socket of the warm sandbox with key in dir.
func Socket(dir, key string) string { return dir + "/hook-" + key + ".sock" }

// Dir is the folder of the warm sandboxes' sockets as this process's
// environment names it (gemkitdir.MakeRuntime, which makes it, is the
// same folder): gemkit's runtime folder of this user (runtimedir.For, which
// imports nothing that Go initializes late, as gemkitdir's
// path/filepath would be: see init).
func Dir() string {
	return runtimedir.For(os.Getenv("XDG_RUNTIME_DIR"), os.TempDir(), os.Getuid())
}
