package permission

import (
	"os"
	"path/filepath"
	"strings"
)

// Within reports whether path is dir or beneath it. Both must be clean
// and absolute.
func Within(dir, path string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// real resolves the symlinks of p; a path that does not resolve stays as
// it is, cleaned.
func real(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// WithinAny reports whether path, or the folder it resolves to, is inside
// one of roots (resolved folders).
func WithinAny(roots []string, path string) (string, bool) {
	for _, p := range []string{filepath.Clean(path), real(path)} {
		for _, r := range roots {
			if r != "" && Within(r, p) {
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
		roots[i] = real(d)
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
	out := []string{real(workspace)}
	for _, w := range writes {
		if w == AccessHome || w == AccessFull {
			if h := real(home); h != "" && h != "/" {
				out = append(out, h)
			}
			break
		}
	}
	return out
}

// ClosedInputs are where the secrets of gemkit and of the programs it
// serves live on this machine, as the user's environment names them.
type ClosedInputs struct {
	// Home is the user's home folder.
	Home string
	// GeminiHome is $GEMINI_CLI_HOME (Gemini CLI's ~ for .gemini), if set.
	GeminiHome string
	// TempDirs are the temp folders ($TMPDIR of the user and of gemkit)
	// whose gemini/ide holds the IDE companion's discovery files.
	TempDirs []string
	// ClaudeConfigDir is $CLAUDE_CONFIG_DIR, if set.
	ClaudeConfigDir string
	// ConfigDir is the user's config folder ($XDG_CONFIG_HOME, else
	// ~/.config), which holds gemkit's agent configuration.
	ConfigDir string
	// Extra are more folders to close (the extension store's folder when
	// it lives elsewhere).
	Extra []string
}

// ClosedPaths lists the folders no tool may read or write whatever its
// scope, as they are named and as they resolve:
//   - ~/.gemini (and $GEMINI_CLI_HOME/.gemini): Gemini CLI's credentials,
//     the consent records, every extension with its settings;
//   - the resolved targets of ~/.gemini, ~/.gemini/extensions and of every
//     symlink directly inside either, so that a symlinked extensions
//     folder is as closed as the name that leads to it;
//   - the IDE discovery folders ($TMPDIR/gemini/ide): they hold the
//     companion's auth token;
//   - Claude Code's lock files ($CLAUDE_CONFIG_DIR/ide, else
//     ~/.claude/ide): the same token for Claude Code;
//   - gemkit's agent configuration (~/.config/gemkit): a tool that could
//     rewrite it would choose where the next `gemkit run` sends its API
//     key.
func ClosedPaths(in ClosedInputs) []string {
	var out []string
	add := func(p string) {
		if !filepath.IsAbs(p) {
			return
		}
		p = filepath.Clean(p)
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	addResolved := func(p string) {
		add(p)
		if r, err := filepath.EvalSymlinks(p); err == nil {
			add(r)
		}
	}
	var geminis []string
	if in.Home != "" {
		geminis = append(geminis, filepath.Join(in.Home, ".gemini"))
	}
	if in.GeminiHome != "" {
		geminis = append(geminis, filepath.Join(in.GeminiHome, ".gemini"))
	}
	for _, g := range geminis {
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
	for _, t := range in.TempDirs {
		if t != "" {
			addResolved(filepath.Join(t, "gemini", "ide"))
		}
	}
	claude := filepath.Join(in.Home, ".claude", "ide")
	if in.ClaudeConfigDir != "" {
		addResolved(filepath.Join(in.ClaudeConfigDir, "ide"))
	}
	if in.Home != "" {
		addResolved(claude)
	}
	cfg := in.ConfigDir
	if cfg == "" && in.Home != "" {
		cfg = filepath.Join(in.Home, ".config")
	}
	if cfg != "" {
		addResolved(filepath.Join(cfg, "gemkit"))
	}
	for _, d := range in.Extra {
		addResolved(d)
	}
	return out
}
