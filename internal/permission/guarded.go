package permission

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// A Protection is one kind of file that makes another program do
// something when that program later starts or opens the folder, outside
// any sandbox: run code, start a server, follow standing instructions,
// or send credentials elsewhere. docs/sandbox.md ("Protected paths")
// gives each one's source.
type Protection struct {
	// Name is the file or folder name, as it lies in a folder.
	Name string
	// Dir: a folder (what an absent one's placeholder is).
	Dir bool
	// Kind groups the names for words (Kinds).
	Kind string
	// In says where the name is protected: in the workspace (at its
	// top), in the home folder, and in each folder between the workspace
	// and the write scope's root (names programs look for in every folder
	// above the one they start in).
	InWorkspace, InHome, Above bool
	// Pattern: Name is a pattern of names (filepath.Match), such as
	// "*.sublime-project": the existing names it matches are protected as
	// any name is, and a new one is refused (Guarded.Pattern).
	Pattern bool
	// Liftable: a manifest may name it in
	// permissions.filesystem.protectedWrites, which lets its tools write
	// it in the workspace (the consent text says so in words).
	Liftable bool
}

// Kinds of protected files, in the order the words name them.
const (
	KindGit         = "git"
	KindHooks       = "hooks"
	KindEnv         = "env"
	KindAgent       = "agent"
	KindEditor      = "editor"
	KindPackages    = "packages"
	KindStartup     = "startup"
	KindCredentials = "credentials"
)

// kindWords says what each kind makes another program do.
var kindWords = map[string]string{
	KindGit:         "git's folder and configuration: hooks, core.fsmonitor, aliases and included files run code at your next git command",
	KindHooks:       "git hooks: git runs them when you commit, merge, check out or push",
	KindEnv:         "environment files that Gemini CLI, direnv and dotenv loaders read at start: they choose where an agent sends its API key, and .envrc runs as a shell script",
	KindAgent:       "the coding agents' instructions and settings: standing instructions for every session, MCP servers, hooks and commands they start",
	KindEditor:      "editor settings: tasks, run configurations, language servers and project-local scripts that start when the folder or a file in it opens",
	KindPackages:    "a package folder that another extension's code loads: its modules would run with that extension's permissions",
	KindStartup:     "shell start-up files and command configuration, which run at your next login or command",
	KindCredentials: "credentials and the commands that fetch them",
}

// Protections is the policy: every protected name, with where it is
// protected. The .env files beyond these names are protected where they
// exist (EnvFile), and the folders git's configuration names for hooks,
// included files and commands where they lie in the workspace
// (gitProtected).
var Protections = []Protection{
	{Name: ".git", Dir: true, Kind: KindGit, InWorkspace: true, InHome: true},
	{Name: ".gitmodules", Kind: KindGit, InWorkspace: true},
	{Name: ".gitconfig", Kind: KindGit, InHome: true},
	{Name: filepath.Join(".config", "git"), Dir: true, Kind: KindGit, InHome: true},
	{Name: ".husky", Dir: true, Kind: KindHooks, InWorkspace: true, Liftable: true},
	{Name: ".githooks", Dir: true, Kind: KindHooks, InWorkspace: true, Liftable: true},
	{Name: ".env", Kind: KindEnv, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".env.local", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".env.development", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".env.development.local", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".env.production", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".env.production.local", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".env.test", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".env.test.local", Kind: KindEnv, InWorkspace: true, Liftable: true},
	{Name: ".envrc", Kind: KindEnv, InWorkspace: true, InHome: true, Liftable: true},
	{Name: ide.AgentGemini.HomeDir, Dir: true, Kind: KindAgent, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ide.AgentClaude.HomeDir, Dir: true, Kind: KindAgent, InWorkspace: true, InHome: true, Liftable: true},
	{Name: ".codex", Dir: true, Kind: KindAgent, InWorkspace: true, InHome: true, Liftable: true},
	{Name: ide.AgentQwen.HomeDir, Dir: true, Kind: KindAgent, InWorkspace: true, InHome: true, Liftable: true},
	{Name: ".agents", Dir: true, Kind: KindAgent, InWorkspace: true, InHome: true, Liftable: true},
	{Name: ".opencode", Dir: true, Kind: KindAgent, InWorkspace: true, Liftable: true},
	{Name: ".mcp.json", Kind: KindAgent, InWorkspace: true, Liftable: true},
	{Name: ".claude.json", Kind: KindAgent, InHome: true},
	{Name: "opencode.json", Kind: KindAgent, InWorkspace: true, Liftable: true},
	{Name: "opencode.jsonc", Kind: KindAgent, InWorkspace: true, Liftable: true},
	{Name: "GEMINI.md", Kind: KindAgent, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: "AGENTS.md", Kind: KindAgent, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: "AGENTS.override.md", Kind: KindAgent, InWorkspace: true, Above: true, Liftable: true},
	{Name: "CLAUDE.md", Kind: KindAgent, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: "CLAUDE.local.md", Kind: KindAgent, InWorkspace: true, Above: true, Liftable: true},
	{Name: "QWEN.md", Kind: KindAgent, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".vscode", Dir: true, Kind: KindEditor, InWorkspace: true, InHome: true, Liftable: true},
	{Name: ".idea", Dir: true, Kind: KindEditor, InWorkspace: true, Liftable: true},
	{Name: ".dir-locals.el", Kind: KindEditor, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".dir-locals-2.el", Kind: KindEditor, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".nvim.lua", Kind: KindEditor, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".nvimrc", Kind: KindEditor, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".exrc", Kind: KindEditor, InWorkspace: true, InHome: true, Above: true, Liftable: true},
	{Name: ".helix", Dir: true, Kind: KindEditor, InWorkspace: true, Liftable: true},
	{Name: ".zed", Dir: true, Kind: KindEditor, InWorkspace: true, Liftable: true},
	{Name: ".kakrc", Kind: KindEditor, InWorkspace: true, Liftable: true},
	{Name: "*.sublime-project", Kind: KindEditor, InWorkspace: true, Pattern: true, Liftable: true},
	{Name: "node_modules", Dir: true, Kind: KindPackages, Liftable: true},
	{Name: ".node_modules", Dir: true, Kind: KindPackages, InHome: true},
	{Name: ".node_libraries", Dir: true, Kind: KindPackages, InHome: true},
	{Name: ".bashrc", Kind: KindStartup, InHome: true},
	{Name: ".bash_profile", Kind: KindStartup, InHome: true},
	{Name: ".bash_login", Kind: KindStartup, InHome: true},
	{Name: ".bash_logout", Kind: KindStartup, InHome: true},
	{Name: ".profile", Kind: KindStartup, InHome: true},
	{Name: ".zshrc", Kind: KindStartup, InHome: true},
	{Name: ".zshenv", Kind: KindStartup, InHome: true},
	{Name: ".zprofile", Kind: KindStartup, InHome: true},
	{Name: ".zlogin", Kind: KindStartup, InHome: true},
	{Name: ".zlogout", Kind: KindStartup, InHome: true},
	{Name: ".ripgreprc", Kind: KindStartup, InHome: true},
	{Name: ".aws", Dir: true, Kind: KindCredentials, InWorkspace: true, InHome: true},
}

// EnvFile reports whether name is an environment file that loaders read
// (".env" or ".env.<something>", as dotenv-flow, Vite and Next.js read
// ".env.<mode>" and ".env.<mode>.local"): the workspace's existing ones
// are protected whatever their suffix, and a manifest may name any of
// them.
func EnvFile(name string) bool {
	rest, ok := strings.CutPrefix(name, ".env")
	return ok && (rest == "" || len(rest) > 1 && rest[0] == '.' && !strings.ContainsAny(rest, `/\`))
}

// protection returns the Protection of name, if it is one: a name
// matching a pattern is protected as the pattern is.
func protection(name string) (Protection, bool) {
	for _, p := range Protections {
		if p.Name == name {
			return p, true
		}
	}
	for _, p := range Protections {
		if ok, _ := filepath.Match(p.Name, name); ok && p.Pattern && !strings.ContainsAny(name, `/\`) {
			p.Name = name
			return p, true
		}
	}
	if EnvFile(name) {
		return Protection{Name: name, Kind: KindEnv, InWorkspace: true, Liftable: true}, true
	}
	return Protection{}, false
}

// ProtectedName reports whether name is one of the protected names.
func ProtectedName(name string) bool {
	_, ok := protection(name)
	return ok
}

// CheckLiftable says what is wrong with an entry of protectedWrites: a
// name of the workspace's top a manifest may ask to write.
func CheckLiftable(name string) error {
	p, ok := protection(name)
	switch {
	case name == "":
		return fmt.Errorf("is empty")
	case !ok:
		return fmt.Errorf("is not a protected name, so tools with write access may write it already (the names: %s)", LiftableNames())
	case !p.Liftable:
		return fmt.Errorf("is protected whatever a manifest says (%s)", kindWords[p.Kind])
	}
	return nil
}

// LiftableNames lists the names a manifest may ask to write, for messages.
func LiftableNames() string {
	var names []string
	for _, p := range Protections {
		if p.Liftable {
			names = append(names, p.Name)
		}
	}
	return strings.Join(names, ", ") + ", and any other .env.<name>"
}

// LiftWords says in words what writing the protected name does: the
// consent text's line for an entry of protectedWrites.
func LiftWords(name string) string {
	p, ok := protection(name)
	if !ok {
		return name
	}
	return name + " (" + kindWords[p.Kind] + ")"
}

// Guarded is one path kept read-only inside a write scope; Dir says what
// it is (or, when absent, what the sandbox puts there so it cannot be
// created). Kind says why (Protection.Kind).
//
// A Pattern entry stands for names not there yet: the base of Path is a
// pattern (filepath.Match) of names in Path's folder that a tool may not
// create; the sandbox stops a tool that creates one (its existing names
// are guarded one by one, as entries of their own).
type Guarded struct {
	Path    string `json:"path"`
	Dir     bool   `json:"dir"`
	Kind    string `json:"kind,omitempty"`
	Pattern bool   `json:"pattern,omitempty"`
}

// Matches reports whether path is guarded by g: g's path or beneath it,
// or, for a Pattern entry, a name in its folder that the pattern matches
// (or beneath one).
func (g Guarded) Matches(path string) bool {
	if !g.Pattern {
		return fsutil.Within(g.Path, path)
	}
	dir, pat := filepath.Dir(g.Path), filepath.Base(g.Path)
	for p := filepath.Clean(path); fsutil.Within(dir, p) && p != dir; p = filepath.Dir(p) {
		if filepath.Dir(p) == dir {
			ok, _ := filepath.Match(pat, filepath.Base(p))
			return ok
		}
	}
	return false
}

// Why says in words what the guarded path makes another program do.
func (g Guarded) Why() string { return kindWords[g.Kind] }

// GuardInputs is what a run's protected paths are computed from.
type GuardInputs struct {
	// Write is the write scope; Workspace and Home are absolute.
	Write           Access
	Workspace, Home string
	// Lifted are the names of the workspace's top the manifest lets its
	// tools write (protectedWrites).
	Lifted []string
	// ExtensionFolders are the folders of the installed extensions and
	// the sources of the linked ones: the node_modules folders Node
	// would look in from their code are protected.
	ExtensionFolders []string
	// Getenv reads the variables that say where git's own configuration
	// is (GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, XDG_CONFIG_HOME); nil
	// reads none (the default places are read anyway).
	Getenv func(string) string
}

// GuardedPaths are the paths a tool with write scope w may not change
// although they lie in it, for a workspace and home folder (see
// ProtectedPaths).
func GuardedPaths(w Access, workspace, home string) []Guarded {
	return ProtectedPaths(GuardInputs{Write: w, Workspace: workspace, Home: home, Getenv: os.Getenv})
}

// ProtectedPaths are the paths a tool may not change although they lie in
// its write scope (the policy Protections states, and docs/sandbox.md
// explains):
//   - the protected names at the workspace's top, in the home folder and
//     in the folders between them, each where Protections says, and the
//     workspace's existing .env.* files;
//   - the .git of the repository the workspace is in, and, where a .git is
//     a file (a worktree, a submodule), the git folder it points to and
//     that folder's common folder, which hold the hooks and the config;
//   - what the repository's and the user's git configuration name: the
//     core.hooksPath folder, included files, programs git runs (gitPaths);
//   - a home name that is a symbolic link is protected where it leads
//     (a ~/.bashrc kept in a dotfiles repository);
//   - node_modules in every folder above an extension's folder: Node
//     looks there for what the extension's code requires.
//
// Names the manifest lifts (in.Lifted) are left out at the workspace's
// top. Paths outside the write scope are left out (they are read-only
// anyway). Parents are resolved, the names themselves are not followed.
func ProtectedPaths(in GuardInputs) []Guarded {
	roots := WritableRoots(in.Write, in.Workspace, in.Home)
	if len(roots) == 0 {
		return nil
	}
	g := &guardSet{roots: roots, seen: map[string]bool{}}
	var ws, home string
	if filepath.IsAbs(in.Workspace) {
		ws = fsutil.RealPath(in.Workspace)
	}
	if filepath.IsAbs(in.Home) {
		home = fsutil.RealPath(in.Home)
	}
	lifted := func(name string) bool { return slices.Contains(in.Lifted, name) }
	if ws != "" {
		g.workspace(ws, lifted)
	}
	if home != "" {
		g.home(home)
	}
	// The repository the workspace is in, up to the write scope's root.
	repo := ""
	if ws != "" {
		g.above(ws)
		repo = repoOf(ws)
		if repo != "" && repo != ws {
			g.add(filepath.Join(repo, ".git"), true, KindGit)
		}
	}
	g.gitFiles()
	for _, p := range gitPaths(repo, home, in.Getenv) {
		g.add(p.Path, p.Dir, p.Kind)
	}
	g.nodeModules(in.ExtensionFolders, ws, lifted)
	return g.out
}

// guardSet is the paths ProtectedPaths has found so far, each once, and
// only those within the write scope's roots.
type guardSet struct {
	roots []string
	seen  map[string]bool
	out   []Guarded
}

// add protects p, unless it is out of the roots or already there. Every
// path is built on resolved folders, so it is compared as it is: a link
// is protected where it leads, by its target's path.
func (g *guardSet) add(p string, dir bool, kind string) {
	p = filepath.Clean(p)
	if g.seen[p] || !slices.ContainsFunc(g.roots, func(r string) bool { return fsutil.Within(r, p) }) {
		return
	}
	g.seen[p] = true
	g.out = append(g.out, Guarded{Path: p, Dir: dir, Kind: kind})
}

// workspace protects the names at the workspace ws's top that are not
// lifted: the protected names, the .env files of other modes that exist,
// and the existing names a pattern matches.
func (g *guardSet) workspace(ws string, lifted func(string) bool) {
	var patterns []Protection
	for _, p := range Protections {
		switch {
		case !p.InWorkspace || lifted(p.Name):
		case p.Pattern:
			patterns = append(patterns, p)
			if slices.ContainsFunc(g.roots, func(r string) bool { return fsutil.Within(r, ws) }) {
				g.out = append(g.out, Guarded{Path: filepath.Join(ws, p.Name), Kind: p.Kind, Pattern: true})
			}
		default:
			g.add(filepath.Join(ws, p.Name), p.Dir, p.Kind)
		}
	}
	entries, err := os.ReadDir(ws)
	if err != nil {
		return
	}
	for _, e := range entries {
		if EnvFile(e.Name()) && !lifted(e.Name()) && !e.IsDir() {
			g.add(filepath.Join(ws, e.Name()), false, KindEnv)
		}
		for _, p := range patterns {
			if ok, _ := filepath.Match(p.Name, e.Name()); ok && !lifted(e.Name()) {
				g.add(filepath.Join(ws, e.Name()), e.IsDir(), p.Kind)
			}
		}
	}
}

// home protects the names of the home folder. A link in it is what the
// program reads through: its target is protected where it lies.
func (g *guardSet) home(home string) {
	for _, p := range Protections {
		if !p.InHome {
			continue
		}
		hp := filepath.Join(home, p.Name)
		g.add(hp, p.Dir, p.Kind)
		if fi, err := os.Lstat(hp); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if r, err := filepath.EvalSymlinks(hp); err == nil {
				rfi, _ := os.Stat(r)
				g.add(r, rfi != nil && rfi.IsDir(), p.Kind)
			}
		}
	}
}

// above protects the names of the folders between the workspace ws and
// the write scope's root (home included): programs look for these names
// in each of them.
func (g *guardSet) above(ws string) {
	for d := filepath.Dir(ws); d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, in := WithinAny(g.roots, d); !in {
			break
		}
		for _, p := range Protections {
			if p.Above {
				g.add(filepath.Join(d, p.Name), p.Dir, p.Kind)
			}
		}
	}
}

// repoOf is the nearest folder from ws upward that holds a .git, or "".
func repoOf(ws string) string {
	for d := ws; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return ""
		}
	}
}

// gitFiles follows every .git protected so far that is a file (a
// worktree, a submodule) to the real git folder and its common folder.
func (g *guardSet) gitFiles() {
	for _, p := range append([]Guarded(nil), g.out...) {
		if filepath.Base(p.Path) != ".git" {
			continue
		}
		fi, err := os.Lstat(p.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		for i := range g.out {
			if g.out[i].Path == p.Path {
				g.out[i].Dir = false
			}
		}
		gitdir, common := gitFolders(filepath.Dir(p.Path))
		if gitdir != "" {
			g.add(gitdir, true, KindGit)
		}
		if common != "" {
			g.add(common, true, KindGit)
		}
	}
}

// nodeModules protects node_modules in every folder above each extension
// folder: Node resolves require() and import from a file's folder upward.
// Within the workspace ws it is left out when lifted.
func (g *guardSet) nodeModules(folders []string, ws string, lifted func(string) bool) {
	for _, f := range folders {
		if !filepath.IsAbs(f) {
			continue
		}
		for d := filepath.Dir(fsutil.RealPath(f)); ; d = filepath.Dir(d) {
			nm := filepath.Join(d, "node_modules")
			if !(lifted("node_modules") && ws != "" && fsutil.Within(ws, nm)) {
				g.add(nm, true, KindPackages)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
}

// gitFolders reads the "gitdir: <path>" line of the .git file in
// worktree, resolved, and that git folder's common folder ("" when it
// has none), for a worktree or a submodule.
func gitFolders(worktree string) (gitdir, common string) {
	b, err := readIn(worktree, ".git", 4096)
	if err != nil {
		return "", ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return "", ""
	}
	p = strings.TrimSpace(p)
	if !filepath.IsAbs(p) {
		p = filepath.Join(worktree, p)
	}
	gitdir = fsutil.RealPath(p)
	if b, err := readIn(gitdir, "commondir", 4096); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitdir, c)
		}
		common = fsutil.RealPath(c)
	}
	return gitdir, common
}

// readIn reads the regular file name in dir through a confined root: a
// workspace's files are a tool's to change, so a link there must not lead
// gemkit's reads elsewhere, nor a FIFO make it wait.
func readIn(dir, name string, limit int64) ([]byte, error) {
	r, err := fsutil.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(name, limit)
}

// kindLabels name each kind briefly, for the list GuardedWords makes.
var kindLabels = map[string]string{
	KindGit:         "git's folder and configuration",
	KindHooks:       "git hooks",
	KindEnv:         "environment files",
	KindAgent:       "the coding agents' instructions and settings",
	KindEditor:      "editor settings",
	KindPackages:    "package folders another extension's code loads",
	KindStartup:     "shell start-up files",
	KindCredentials: "credentials",
}

// GuardedWords names the protected paths in words, by kind, as both the
// consent text and `describe` print them ("~/" marks a name protected in
// the home folder only).
func GuardedWords() string {
	byKind := map[string][]string{}
	var order []string
	for _, p := range Protections {
		if _, ok := byKind[p.Kind]; !ok {
			order = append(order, p.Kind)
		}
		name := p.Name
		switch {
		case p.Pattern:
		case p.Kind == KindEnv && name != ".env" && EnvFile(name):
			name = ".env.*"
		case p.InHome && !p.InWorkspace:
			name = "~/" + name
		}
		if !slices.Contains(byKind[p.Kind], name) {
			byKind[p.Kind] = append(byKind[p.Kind], name)
		}
	}
	byKind[KindGit] = append(byKind[KindGit], "what git's configuration includes or runs")
	byKind[KindHooks] = append(byKind[KindHooks], "the core.hooksPath folder")
	var parts []string
	for _, k := range order {
		parts = append(parts, kindLabels[k]+" ("+strings.Join(byKind[k], ", ")+")")
	}
	return strings.Join(parts, "; ")
}

// Reasons says, kind by kind, what the protected paths make other
// programs do, for `describe` and the documentation.
func Reasons() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range Protections {
		if !seen[p.Kind] {
			seen[p.Kind] = true
			out = append(out, kindLabels[p.Kind]+": "+kindWords[p.Kind])
		}
	}
	return out
}

// Covering returns the guarded path that path is, or lies beneath: a
// write there would change what another program runs or obeys. path and
// the guarded paths are compared resolved (ProtectedPaths resolves the
// parents of its paths; path is resolved as far as it exists).
func Covering(list []Guarded, path string) (Guarded, bool) {
	p := resolvePartly(path)
	for _, g := range list {
		if g.Matches(p) || g.Matches(filepath.Clean(path)) {
			return g, true
		}
	}
	return Guarded{}, false
}

// resolvePartly resolves the symlinks of the longest existing prefix of
// path, so that a file that does not exist yet is named where it would be
// created.
func resolvePartly(path string) string {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	dir := filepath.Dir(path)
	if dir == path {
		return path
	}
	return filepath.Join(resolvePartly(dir), filepath.Base(path))
}
