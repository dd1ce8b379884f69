package permission

import (
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// ProxySource is the address the sandbox's proxy dials this machine's
// loopback services from: 127.0.31.28, the proxy's port (3128) in the
// last two bytes. The kernel never picks it by itself for a connection
// to 127.0.0.1, which comes from 127.0.0.1, so a connection from it came
// through a sandbox's proxy: gemkit's own servers refuse it
// (FromSandbox), and a token a tool read somehow is worth nothing from
// inside. This holds whatever the proxy's own refusal of their ports
// (OwnServerPort) knows or misses.
var ProxySource = netip.AddrFrom4([4]byte{127, 0, 31, 28})

// FromSandbox reports whether a TCP connection whose remote address is
// remoteAddr ("ip:port", as net/http's Request.RemoteAddr and
// net.Conn.RemoteAddr give it) came through a sandbox's proxy.
func FromSandbox(remoteAddr string) bool {
	ap, err := netip.ParseAddrPort(remoteAddr)
	return err == nil && ap.Addr().Unmap() == ProxySource
}

// Env is what one process's environment says about where the programs
// gemkit serves keep their secrets: the writer's view, which need not be
// gemkit's (a companion started from another shell with another TMPDIR,
// a `gemkit mcp --http` with another GEMINI_CLI_HOME).
type Env struct {
	// Home is $HOME.
	Home string
	// Dir is the process's working folder, from which an agent takes a
	// relative home variable ("" is this process's).
	Dir string
	// TempDirs are $TMPDIR, $TMP and $TEMP: Node's os.tmpdir() takes the
	// first one set, Go's os.TempDir() $TMPDIR; either falls back to /tmp.
	TempDirs []string
	// Homes are the agents' home variables that are set (ide.HomeVars:
	// $GEMINI_CLI_HOME, $CLAUDE_CONFIG_DIR, $QWEN_HOME, …), by name.
	Homes map[string]string
	// ConfigHome is $XDG_CONFIG_HOME.
	ConfigHome string
}

// getenv reads the agents' home variables of e.
func (e Env) getenv(k string) string { return e.Homes[k] }

// EnvOf reads an Env through getenv.
func EnvOf(getenv func(string) string) Env {
	e := Env{Home: getenv("HOME"), ConfigHome: getenv("XDG_CONFIG_HOME")}
	for _, k := range ide.HomeVars() {
		if v := getenv(k); v != "" {
			if e.Homes == nil {
				e.Homes = map[string]string{}
			}
			e.Homes[k] = v
		}
	}
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		if v := getenv(k); v != "" {
			e.TempDirs = append(e.TempDirs, v)
		}
	}
	return e
}

// envOfList reads an Env from KEY=VALUE entries (a process's environ).
func envOfList(list []string) Env {
	want := append([]string{"HOME", "TMPDIR", "TMP", "TEMP", "XDG_CONFIG_HOME"}, ide.HomeVars()...)
	m := make(map[string]string, len(want))
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if ok && slices.Contains(want, k) {
			m[k] = v
		}
	}
	return EnvOf(func(k string) string { return m[k] })
}

// AccountHome is the home folder the system's user database gives this
// user (getpwuid), "" when it names no folder of this user's: unlike
// $HOME, no environment moves it, so gemkit keeps there what every
// gemkit process of the user must find, whatever environment it has.
func AccountHome() string {
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) || u.HomeDir == "/" {
		return ""
	}
	fi, err := os.Stat(u.HomeDir)
	if err != nil || !fi.IsDir() {
		return ""
	}
	if !ownedByMe(fi) {
		return ""
	}
	return u.HomeDir
}

// RecordDirs are the folders where gemkit's servers record themselves
// (RecordServer), the first one the place a server records in: the
// account's home folder's ~/.gemini/gemkit/servers, which no environment
// moves, else /tmp/gemkit-UID/servers; then the places older versions
// recorded in, in Gemini CLI's folder under the $HOME and
// $GEMINI_CLI_HOME of env, which are read too.
func RecordDirs(env Env) []string {
	var out []string
	if h := AccountHome(); h != "" {
		out = append(out, serversDir(ide.AgentGemini.DefaultFolder(h)))
	}
	out = append(out, gemkitdir.TempServers(os.Getuid()))
	for _, g := range []string{ide.AgentGemini.DefaultFolder(env.Home), geminiMoved(env)} {
		if filepath.IsAbs(g) {
			out = appendNew(out, serversDir(g))
		}
	}
	return out
}

// geminiMoved is Gemini CLI's folder under $GEMINI_CLI_HOME of env, ""
// when it is not set.
func geminiMoved(env Env) string {
	if env.getenv(ide.AgentGemini.HomeEnv) == "" {
		return ""
	}
	return ide.AgentGemini.Folder(env.getenv, env.Home, env.Dir)
}

func serversDir(gemini string) string { return gemkitdir.Servers(gemini) }

func appendNew(list []string, p string) []string {
	for _, q := range list {
		if q == p {
			return list
		}
	}
	return append(list, p)
}

// Locator finds the environments of the servers running on this machine
// for this user (Writers), whose secrets gemkit closes to tools and whose
// ports the sandbox proxy refuses, wherever those environments put them.
// It remembers what it found per listening socket, so that a run costs
// one look at the listening sockets unless a new server started. The
// zero value is ready; a Locator is safe for concurrent use.
type Locator struct {
	mu sync.Mutex
	// byInode is what each listening socket's process said (nil: no
	// process of this user's holds it that gemkit can see).
	byInode map[uint64]*Env
}

// Writers are the environments of the processes of this user that listen
// on a TCP port of this machine's loopback (or on every address): the
// IDE companions (gemkit's, VS Code's, Claude Code's), `gemkit mcp
// --http`. Each says where its process wrote its discovery or lock file
// and token. Nil where the system cannot be asked (not Linux).
func (l *Locator) Writers() []Env {
	if l == nil {
		return nil
	}
	return l.writers()
}
