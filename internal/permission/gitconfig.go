package permission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// gitVar is one variable of a git configuration file: section and key in
// lower case, the subsection as written (git compares it exactly).
type gitVar struct {
	section, subsection, key, value string
}

// name is the variable as `git config --list` names it.
func (v gitVar) name() string {
	if v.subsection != "" {
		return v.section + "." + v.subsection + "." + v.key
	}
	return v.section + "." + v.key
}

// parseGitConfig reads a git configuration file the way git does
// (git-config(1), "CONFIGURATION FILE"): sections "[name]", "[name
// "sub"]" and the older "[name.sub]", variables "key = value" (or "key"
// alone, a true boolean), values with double quotes, the escapes \n \t
// \b \" \\ and a backslash before the end of a line continuing it, "#" and
// ";" starting a comment outside quotes. Where git would stop at a bad
// line, the variables read before it are returned: git refuses the whole
// file then, so nothing after it takes effect either.
//
// gemkit reads only what tells which files in a workspace git runs or
// reads (core.hooksPath, include.path, commands), and go-git's reader
// (gcfg) refuses whole files that git reads, such as the "[name.sub]"
// form, so the parser is gemkit's own; TestGitConfigLikeGit compares it
// with the real git on such files.
func parseGitConfig(text string) []gitVar {
	var out []gitVar
	var section, sub string
	// git reads "\r\n" as "\n" and skips a byte order mark.
	s := strings.TrimPrefix(strings.ReplaceAll(text, "\r\n", "\n"), "\ufeff")
	i := 0
	for i < len(s) {
		// Blank space and comments between entries.
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case c == '#' || c == ';':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '[':
			var ok bool
			section, sub, i, ok = parseGitSection(s, i+1)
			if !ok {
				return out
			}
			continue
		}
		if section == "" || !isAlpha(c) {
			return out
		}
		start := i
		for i < len(s) && (isAlpha(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '-') {
			i++
		}
		key := strings.ToLower(s[start:i])
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) || s[i] == '\n' {
			out = append(out, gitVar{section, sub, key, ""})
			continue
		}
		if s[i] != '=' {
			return out
		}
		value, next, ok := parseGitValue(s, i+1)
		if !ok {
			return out
		}
		out = append(out, gitVar{section, sub, key, value})
		i = next
	}
	return out
}

// parseGitSection reads a section header after its "[".
func parseGitSection(s string, i int) (section, sub string, next int, ok bool) {
	start := i
	for i < len(s) && (isAlpha(s[i]) || s[i] >= '0' && s[i] <= '9' || s[i] == '-' || s[i] == '.') {
		i++
	}
	name := s[start:i]
	if name == "" {
		return "", "", i, false
	}
	if i < len(s) && s[i] == ']' {
		// "[name.sub]": the older form, whose subsection git lowers.
		name = strings.ToLower(name)
		if dot := strings.IndexByte(name, '.'); dot >= 0 {
			return name[:dot], name[dot+1:], i + 1, true
		}
		return name, "", i + 1, true
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || s[i] != '"' {
		return "", "", i, false
	}
	i++
	var b strings.Builder
	for ; i < len(s) && s[i] != '"'; i++ {
		switch s[i] {
		case '\n':
			return "", "", i, false
		case '\\':
			i++
			if i >= len(s) || s[i] == '\n' {
				return "", "", i, false
			}
		}
		b.WriteByte(s[i])
	}
	if i+1 >= len(s) || s[i+1] != ']' {
		return "", "", i, false
	}
	return strings.ToLower(name), b.String(), i + 2, true
}

// parseGitValue reads a value after its "=", up to the end of its line.
func parseGitValue(s string, i int) (value string, next int, ok bool) {
	var b strings.Builder
	quoted := false
	pending := 0 // spaces held back: kept only if more value follows
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\n' && !quoted {
			return b.String(), i + 1, true
		}
		if c == '\n' {
			return "", i, false
		}
		if !quoted && (c == ' ' || c == '\t' || c == '\r') {
			if b.Len() > 0 {
				pending++
			}
			continue
		}
		if !quoted && (c == '#' || c == ';') {
			for i < len(s) && s[i] != '\n' {
				i++
			}
			return b.String(), i, true
		}
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			i++
			if i >= len(s) {
				return "", i, false
			}
			switch s[i] {
			case '\n':
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				return "", i, false
			}
		default:
			b.WriteByte(c)
		}
	}
	if quoted {
		return "", i, false
	}
	return b.String(), i, true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// gitCommandKeys are the variables whose value is a command git runs
// (its first word the program), by section, subsection ("*": any) and
// key, as git-config(1) lists them.
var gitCommandKeys = []struct{ section, sub, key string }{
	{"core", "", "fsmonitor"}, {"core", "", "sshcommand"}, {"core", "", "editor"}, {"core", "", "pager"},
	{"core", "", "askpass"}, {"sequence", "", "editor"}, {"diff", "", "external"}, {"gpg", "", "program"},
	{"gpg", "*", "program"}, {"credential", "", "helper"}, {"credential", "*", "helper"},
	{"filter", "*", "clean"}, {"filter", "*", "smudge"}, {"filter", "*", "process"},
	{"merge", "*", "driver"}, {"diff", "*", "textconv"}, {"diff", "*", "command"},
}

// maxGitIncludes bounds how deep included configuration files are
// followed (git itself stops at 10).
const maxGitIncludes = 10

// gitPaths are the files and folders that git's configuration makes git
// run or read from a working tree, found in the configuration of the
// repository whose working tree is repo ("" for none), the user's (for
// home and the account's home folder, $XDG_CONFIG_HOME and
// $GIT_CONFIG_GLOBAL) and the system's: the core.hooksPath folder (git
// runs the hooks there instead of .git/hooks: husky's .husky/_), the
// files included (include.path, includeIf.*.path: what they set counts
// as much as .git/config), and the programs commands name by a path
// (core.fsmonitor, core.sshCommand, filters, credential helpers, "!"
// aliases...). Where one does not exist the first missing folder or file
// on its way is returned, so that it cannot be created. Every file is
// read through a confined root, regular files only.
func gitPaths(repo, home string, getenv func(string) string) []Guarded {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	files := gitConfigFiles(repo, home, getenv)
	expand := gitExpander(home)
	var out []Guarded
	guard := func(p string, dir bool, kind string) {
		if g, ok := firstMissing(p, dir, kind); ok {
			out = append(out, g)
		}
	}
	seen := map[string]bool{}
	for i := 0; i < len(files); i++ {
		f := files[i]
		if seen[f.path] {
			continue
		}
		seen[f.path] = true
		b, err := readIn(filepath.Dir(f.path), filepath.Base(f.path), 1<<20)
		if err != nil {
			continue
		}
		for _, v := range parseGitConfig(string(b)) {
			switch {
			case v.section == "core" && v.subsection == "" && v.key == "hookspath":
				guard(expand(v.value, repo), true, KindHooks)
			case v.key == "path" && (v.section == "include" && v.subsection == "" || v.section == "includeif"):
				p := expand(v.value, filepath.Dir(f.path))
				guard(p, false, KindGit)
				if p != "" && f.depth < maxGitIncludes {
					files = append(files, gitConfigFile{p, f.depth + 1})
				}
			case v.section == "alias" && strings.HasPrefix(v.value, "!"):
				guard(programPath(strings.TrimPrefix(v.value, "!"), repo, expand), false, KindGit)
			default:
				for _, k := range gitCommandKeys {
					if v.section == k.section && v.key == k.key && (k.sub == "*" && v.subsection != "" || k.sub == v.subsection) {
						guard(programPath(v.value, repo, expand), false, KindGit)
					}
				}
			}
		}
	}
	return out
}

// gitConfigFile is a configuration file git reads, and how many includes
// deep it was found.
type gitConfigFile struct {
	path  string
	depth int
}

// gitConfigFiles are the configuration files git reads for the working
// tree repo ("" for none), in git's order: the repository's (through a
// .git file to its git folder), the user's ($GIT_CONFIG_GLOBAL,
// $XDG_CONFIG_HOME, and those of home and the account's home folder),
// and the system's.
func gitConfigFiles(repo, home string, getenv func(string) string) []gitConfigFile {
	var files []gitConfigFile
	if repo != "" {
		gitdir, common := filepath.Join(repo, ".git"), ""
		if fi, err := os.Lstat(gitdir); err == nil && fi.Mode().IsRegular() {
			gitdir, common = gitFolders(repo)
		}
		if common == "" {
			common = gitdir
		}
		if gitdir != "" {
			files = append(files, gitConfigFile{filepath.Join(common, "config"), 0}, gitConfigFile{filepath.Join(gitdir, "config.worktree"), 0})
		}
	}
	homes := []string{}
	for _, h := range []string{home, AccountHome()} {
		if filepath.IsAbs(h) && !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	if g := getenv("GIT_CONFIG_GLOBAL"); filepath.IsAbs(g) {
		files = append(files, gitConfigFile{g, 0})
	}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		files = append(files, gitConfigFile{filepath.Join(x, "git", "config"), 0})
	}
	for _, h := range homes {
		files = append(files, gitConfigFile{filepath.Join(h, ".gitconfig"), 0}, gitConfigFile{filepath.Join(h, ".config", "git", "config"), 0})
	}
	sys := "/etc/gitconfig"
	if s := getenv("GIT_CONFIG_SYSTEM"); filepath.IsAbs(s) {
		sys = s
	}
	return append(files, gitConfigFile{sys, 0})
}

// gitExpander resolves a path a git configuration names as git does: "~/"
// in home, an absolute path as it is, others from base; "" for one that
// cannot be resolved (no home, no base).
func gitExpander(home string) func(p, base string) string {
	return func(p, base string) string {
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			if home == "" {
				return ""
			}
			return filepath.Join(home, rest)
		}
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		if base == "" {
			return ""
		}
		return filepath.Join(base, p)
	}
}

// firstMissing is the first missing component on the way to p ("" for
// none), as a folder unless it is p itself and p is not dir: protecting
// it keeps the path from being created.
func firstMissing(p string, dir bool, kind string) (Guarded, bool) {
	if p == "" {
		return Guarded{}, false
	}
	for q := p; ; q = filepath.Dir(q) {
		parent := filepath.Dir(q)
		if parent == q {
			return Guarded{}, false
		}
		if _, err := os.Lstat(parent); err == nil {
			return Guarded{Path: filepath.Join(fsutil.RealPath(parent), filepath.Base(q)), Dir: dir || q != p, Kind: kind}, true
		}
	}
}

// programPath is the file a command's first word names when it names one
// by a path (with a "/"), resolved against the working tree; "" for a
// program found on PATH or a builtin value ("true", "store").
func programPath(command, worktree string, expand func(p, base string) string) string {
	fields := strings.Fields(command)
	if len(fields) == 0 || !strings.Contains(fields[0], "/") {
		return ""
	}
	return expand(strings.Trim(fields[0], `"'`), worktree)
}
