package permission

import (
	"os"
	"path/filepath"
	"strings"
)

// GuardedDirs and GuardedFiles are the names that stay read-only inside a
// writable workspace or home folder, whatever the manifest says: what
// they hold runs later outside any sandbox (git hooks and core.fsmonitor,
// an editor's folder-open tasks, the MCP servers Gemini CLI and Claude
// Code start, direnv's .envrc, shell start-up files) or holds credentials
// (.aws). The set holds at least what OpenAI Codex (.git, .codex,
// .agents, .aws) and Anthropic's sandbox-runtime (DANGEROUS_FILES and
// DANGEROUS_DIRECTORIES in its sandbox-utils.js: .git hooks and config,
// .vscode, .idea, .claude, .mcp.json, the shell files, .gitconfig,
// .gitmodules, .ripgreprc) protect.
var (
	GuardedDirs  = []string{".git", ".gemini", ".vscode", ".idea", ".claude", ".codex", ".agents", ".aws"}
	GuardedFiles = []string{".mcp.json", ".envrc", ".gitconfig", ".gitmodules", ".ripgreprc",
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout"}
)

// Guarded is one path kept read-only inside a write scope; Dir says what
// it is (or, when absent, what the sandbox puts there so it cannot be
// created).
type Guarded struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir"`
}

// GuardedPaths are the paths a tool with write scope w may not change
// although they lie in it: the guarded names in the workspace and in the
// home folder, the .git of the repository the workspace is in (up to the
// write scope's root), and, where a .git is a file (a worktree, a
// submodule), the git folder it points to and that folder's common
// folder, which hold the hooks and the config. Paths outside the write
// scope are left out (they are read-only anyway). Parents are resolved,
// the names themselves are not followed.
func GuardedPaths(w Access, workspace, home string) []Guarded {
	roots := WritableRoots(w, workspace, home)
	if len(roots) == 0 {
		return nil
	}
	var out []Guarded
	seen := map[string]bool{}
	add := func(p string, dir bool) {
		if seen[p] {
			return
		}
		if _, in := WithinAny(roots, p); !in {
			return
		}
		seen[p] = true
		out = append(out, Guarded{Path: p, Dir: dir})
	}
	var bases []string
	for _, b := range []string{workspace, home} {
		if b != "" && filepath.IsAbs(b) {
			bases = append(bases, real(b))
		}
	}
	for _, b := range bases {
		for _, n := range GuardedDirs {
			add(filepath.Join(b, n), true)
		}
		for _, n := range GuardedFiles {
			add(filepath.Join(b, n), false)
		}
	}
	// The repository the workspace is in, up to the write scope's root.
	if len(bases) > 0 {
		ws := bases[0]
		for d := filepath.Dir(ws); d != filepath.Dir(d); d = filepath.Dir(d) {
			if _, in := WithinAny(roots, d); !in {
				break
			}
			if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
				add(filepath.Join(d, ".git"), true)
				break
			}
		}
	}
	// Every .git that is a file leads to the real git folder.
	for _, g := range append([]Guarded(nil), out...) {
		if filepath.Base(g.Path) != ".git" {
			continue
		}
		fi, err := os.Lstat(g.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		for i := range out {
			if out[i].Path == g.Path {
				out[i].Dir = false
			}
		}
		gitdir := gitdirOf(g.Path)
		if gitdir == "" {
			continue
		}
		add(gitdir, true)
		if b, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
			common := strings.TrimSpace(string(b))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gitdir, common)
			}
			add(real(common), true)
		}
	}
	return out
}

// gitdirOf reads the "gitdir: <path>" line of a .git file, resolved.
func gitdirOf(dotgit string) string {
	b, err := os.ReadFile(dotgit)
	if err != nil || len(b) > 4096 {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	p = strings.TrimSpace(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(dotgit), p)
	}
	return real(p)
}

// GuardedWords names the guarded names in words, as both the consent
// text and `describe` print them.
func GuardedWords() string {
	return "the folders " + strings.Join(GuardedDirs, ", ") + " and the files " + strings.Join(GuardedFiles, ", ")
}
