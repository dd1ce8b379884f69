package permission

import (
	"os"
	"path/filepath"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// WithinAny reports whether path, or the folder it resolves to, is inside
// one of roots (resolved folders).
func WithinAny(roots []string, path string) (string, bool) {
	for _, p := range []string{filepath.Clean(path), fsutil.RealPath(path)} {
		for _, r := range roots {
			if r != "" && fsutil.Within(r, p) {
				return r, true
			}
		}
	}
	return "", false
}

// SearchPath is the part of a PATH value that may be searched for a
// program a tool runs: absolute entries only (a relative or empty one
// names the tool's working folder), and none inside a folder some tool
// may write (untrusted), whether named directly or through a symlink. An
// activated virtualenv's .venv/bin or a node_modules/.bin in the
// workspace is such a folder: a tool that may write the workspace could
// plant a python3 there that another extension's tool would then start
// with its own permissions. Dropped lists the entries left out, for the
// error that names them.
func SearchPath(path string, untrusted []string) (kept, dropped []string) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if _, in := WithinAny(untrusted, dir); in {
			dropped = append(dropped, dir)
			continue
		}
		kept = append(kept, dir)
	}
	return kept, dropped
}

// WritableRoots are the folders a write scope lets a tool change, with
// symlinks resolved: none, the workspace, the home folder or "/".
func WritableRoots(w Access, workspace, home string) []string {
	var roots []string
	switch w {
	case AccessFull:
		roots = []string{"/"}
	case AccessHome:
		roots = []string{home}
	case AccessWorkspace:
		roots = []string{workspace}
	}
	for i, d := range roots {
		roots[i] = fsutil.RealPath(d)
	}
	return roots
}

// Untrusted are the folders whose programs no tool run may start or ask
// for an interpreter: the workspace always (any extension may be granted
// write: workspace there, and a workspace's .venv or node_modules/.bin is
// its own to change), and the home folder when a tool of one of the
// installed extensions (writes, their write scopes) may write it. A write
// scope of "full" counts as the workspace and the home folder: the
// system's folders cannot all be distrusted, and a tool that may write
// them as root has been trusted with the machine.
func Untrusted(workspace, home string, writes []Access) []string {
	out := []string{fsutil.RealPath(workspace)}
	for _, w := range writes {
		if w == AccessHome || w == AccessFull {
			if h := fsutil.RealPath(home); h != "" && h != "/" {
				out = append(out, h)
			}
			break
		}
	}
	return out
}

// ClosedInputs are where the secrets of gemkit and of the programs it
// serves live on this machine. The fields up to Extra are this process's
// view (its user's environment); Writers adds the view of every server
// running for this user, and the account's home folder and /tmp are
// always looked at, so that a secret is closed where its writer put it,
// whatever environment gemkit itself has.
type ClosedInputs struct {
	// Home is the user's home folder.
	Home string
	// Dir is this process's working folder, from which an agent takes a
	// relative home variable; "" is os.Getwd's.
	Dir string
	// Homes are the agents' home variables that are set
	// (ide.HomeVars: $GEMINI_CLI_HOME, $CLAUDE_CONFIG_DIR, $QWEN_HOME, …),
	// by name: they move Gemini CLI's folder and Claude Code's and Qwen
	// Code's lock folders. Nil reads them through Getenv.
	Homes map[string]string
	// TempDirs are the temp folders ($TMPDIR of the user and of gemkit)
	// whose gemini/ide holds the IDE companion's discovery files.
	TempDirs []string
	// ConfigDir is the user's config folder ($XDG_CONFIG_HOME, else
	// ~/.config), which holds gemkit's agent configuration.
	ConfigDir string
	// Extra are more folders to close (the extension store's folder when
	// it lives elsewhere).
	Extra []string
	// Writers are the environments of the servers running for this user
	// (Locator.Writers): each says where its discovery or lock file, its
	// token and its configuration are.
	Writers []Env
	// RecordDirs are where gemkit's servers record their ports and
	// secret files (RecordServer); nil is RecordDirs of this process's
	// environment.
	RecordDirs []string
	// Getenv reads this process's environment for the variables that
	// move other programs' credentials (CODEX_HOME, KUBECONFIG, …:
	// CredentialPaths); nil reads none (the default places are closed
	// anyway).
	Getenv func(string) string
}

// ClosedOf are the ClosedInputs of the person's environment getenv:
// its home folder ($HOME), its config folder ($XDG_CONFIG_HOME), the
// temporary folders whose gemini/ide may hold a companion's discovery
// file ($TMPDIR, $TMP and $TEMP, this process's os.TempDir() and /tmp:
// the one list of them), and getenv for the variables that move other
// programs' credentials. Every kind of sandboxed process's profile
// closes what these name; a caller sets only what it knows better (the
// home folder it resolved, more folders to close).
func ClosedOf(getenv func(string) string) ClosedInputs {
	return ClosedInputs{Home: getenv("HOME"), ConfigDir: getenv("XDG_CONFIG_HOME"),
		TempDirs: []string{getenv("TMPDIR"), getenv("TMP"), getenv("TEMP"), os.TempDir(), "/tmp"},
		Getenv:   getenv}
}

// envs are the environments whose places are closed: this process's,
// the account's home folder with nothing set (the default places of a
// program started without this process's variables), and the running
// servers'.
func (in ClosedInputs) envs() []Env {
	own := Env{Home: in.Home, Dir: in.Dir, TempDirs: in.TempDirs, Homes: in.homes(), ConfigHome: in.ConfigDir}
	out := []Env{own}
	if h := AccountHome(); h != "" && h != in.Home {
		out = append(out, Env{Home: h})
	}
	return append(out, in.Writers...)
}

// homes are the agents' home variables of this process: Homes, else
// those Getenv reads.
func (in ClosedInputs) homes() map[string]string {
	if in.Homes != nil || in.Getenv == nil {
		return in.Homes
	}
	return EnvOf(in.Getenv).Homes
}

// runtimeDirs are gemkit's runtime folders for this environment and
// this process's (gemkitdir.RuntimeDirs).
func (in ClosedInputs) runtimeDirs() []string {
	runtimes := []string{os.Getenv("XDG_RUNTIME_DIR")}
	if in.Getenv != nil {
		runtimes = append(runtimes, in.Getenv("XDG_RUNTIME_DIR"))
	}
	return gemkitdir.RuntimeDirs(runtimes, append(append([]string(nil), in.TempDirs...), os.TempDir()), os.Getuid())
}

func (in ClosedInputs) recordDirs() []string {
	if in.RecordDirs != nil {
		return in.RecordDirs
	}
	return RecordDirs(Env{Home: in.Home, Dir: in.Dir, Homes: in.homes()})
}

// places are the folders of one kind the environments name.
type places struct {
	// geminis: Gemini CLI's folders; discovery: the IDE discovery
	// folders (<tmp>/gemini/ide); locks: Claude Code's and Qwen Code's
	// lock folders (<dir>/ide); configs: gemkit's agent configuration
	// and data.
	geminis, discovery, locks, configs []string
}

func (in ClosedInputs) places() places {
	var p places
	abs := func(list *[]string, path string) {
		if filepath.IsAbs(path) {
			*list = appendNew(*list, filepath.Clean(path))
		}
	}
	p.discovery = []string{filepath.Join("/tmp", filepath.FromSlash(ide.DiscoveryDirName))}
	for _, e := range in.envs() {
		home := e.Home
		if !filepath.IsAbs(home) {
			home = ""
		}
		// Each agent's folder where the environment puts it, and where
		// a program started without its variable would.
		for _, a := range ide.Agents {
			for _, f := range []string{a.DefaultFolder(home), a.Folder(e.getenv, home, e.Dir)} {
				if f == "" {
					continue
				}
				if a.ClosedWhole {
					abs(&p.geminis, f)
				}
				if a.LockDir != "" {
					abs(&p.locks, filepath.Join(f, a.LockDir))
				}
			}
		}
		if home != "" {
			abs(&p.configs, gemkitdir.HomeConfig(home))
			// The extensions' MCP servers' data folders (extmcp).
			abs(&p.configs, gemkitdir.Data(home))
		}
		for _, t := range e.TempDirs {
			if t != "" {
				abs(&p.discovery, filepath.Join(t, filepath.FromSlash(ide.DiscoveryDirName)))
			}
		}
		if e.ConfigHome != "" {
			abs(&p.configs, gemkitdir.Config(e.ConfigHome))
		}
	}
	return p
}

// ClosedPaths lists the folders (and files) no tool may read or write
// whatever its scope, as they are named and as they resolve, for every
// environment ClosedInputs gathers:
//   - ~/.gemini (and $GEMINI_CLI_HOME/.gemini): Gemini CLI's credentials,
//     the consent records, gemkit's records, every extension with its
//     settings;
//   - the resolved targets of ~/.gemini, ~/.gemini/extensions and of every
//     symlink directly inside either, so that a symlinked extensions
//     folder is as closed as the name that leads to it;
//   - the IDE discovery folders (<tmp>/gemini/ide): they hold the
//     companions' auth tokens;
//   - Claude Code's and Qwen Code's lock folders ($CLAUDE_CONFIG_DIR/ide,
//     ~/.claude/ide, $QWEN_HOME/ide, ~/.qwen/ide): the same tokens for
//     them;
//   - gemkit's agent configuration ($XDG_CONFIG_HOME/gemkit and
//     ~/.config/gemkit): a tool that could rewrite it would choose where
//     the next `gemkit run` sends its API key;
//   - gemkit's data (~/.local/share/gemkit): the private data folders of
//     the extensions' MCP servers, each opened to its own extension's
//     servers only (internal/extmcp);
//   - gemkit's runtime folders ($XDG_RUNTIME_DIR/gemkit,
//     /run/user/UID/gemkit, gemkit-UID in each temporary folder): the
//     code-intelligence brokers' sockets and logs and the hooks' warm
//     servers' sockets (gemkitdir.RuntimeDirs);
//   - the secret files gemkit's servers recorded (a `gemkit mcp --http
//     --token-file` anywhere);
//   - the other programs' credentials, every kind (CredentialPaths): a
//     tool's policy reopens the kinds its manifest names (Resolve).
func ClosedPaths(in ClosedInputs) []string {
	var out []string
	add := func(p string) {
		if filepath.IsAbs(p) {
			out = appendNew(out, filepath.Clean(p))
		}
	}
	// Most places do not exist: one lstat says so, where resolving
	// would look at each folder on the way.
	addResolved := func(p string) {
		add(p)
		if _, err := os.Lstat(p); err != nil {
			return
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			add(r)
		}
	}
	pl := in.places()
	for _, g := range pl.geminis {
		for _, d := range []string{g, filepath.Join(g, "extensions")} {
			addResolved(d)
			entries, err := os.ReadDir(d)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if e.Type()&os.ModeSymlink != 0 {
					if r, err := filepath.EvalSymlinks(filepath.Join(d, e.Name())); err == nil {
						add(r)
					}
				}
			}
		}
	}
	for _, list := range [][]string{pl.discovery, pl.locks, pl.configs} {
		for _, d := range list {
			addResolved(d)
		}
	}
	for _, r := range readRecords(in.recordDirs()) {
		for _, f := range r.Secrets {
			addResolved(f)
		}
	}
	for _, d := range in.Extra {
		addResolved(d)
	}
	for _, d := range in.runtimeDirs() {
		addResolved(d)
	}
	for _, d := range CredentialPaths(in, nil) {
		add(d)
	}
	return out
}
