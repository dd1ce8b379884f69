// A Go module that the workspace's go.mod requires and the module cache
// lacks, as gopls's diagnostics show it, with what to do: gopls runs
// without network in the sandbox and cannot download it
// (docs/code-intel.md, "No network, and Go's module proxy").

package langserver

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// unprovidedImport is the import path in gopls's words for an import it
// found no package for, "" when msg is not of that shape. gopls v0.23.0
// (internal/cache/check.go, missingPkgError) says, in a module or go.work
// workspace,
//
//	could not import P (no required module provides package "P")
//
// both when go.mod does not require P's module and when it does but the
// module is missing from the cache and GOPROXY=off refused the download
// (TestMissingModuleGopls): only go.mod and the cache tell them apart.
func unprovidedImport(msg string) string {
	rest, ok := strings.CutPrefix(msg, "could not import ")
	if !ok {
		return ""
	}
	pkg, quoted, ok := strings.Cut(rest, " (no required module provides package ")
	if !ok || pkg == "" || strings.ContainsAny(pkg, " \t\n") {
		return ""
	}
	quoted, ok = strings.CutSuffix(quoted, ")")
	if !ok {
		return ""
	}
	if q, err := strconv.Unquote(quoted); err != nil || q != pkg {
		return ""
	}
	return pkg
}

// requiredModule is the module go.mod's text requires that provides pkg
// (the longest required path that is pkg or leads to it at a slash) and
// its version; "" when none does, or when a replace directive names that
// module: its code then need not come from the module cache.
func requiredModule(gomod []byte, pkg string) (mod, ver string) {
	replaced := map[string]bool{}
	directive := func(verb string, args []string) {
		switch {
		case verb == "replace" && len(args) > 0:
			replaced[args[0]] = true
		case verb == "require" && len(args) >= 2 && len(args[0]) > len(mod) &&
			(pkg == args[0] || strings.HasPrefix(pkg, args[0]+"/")):
			mod, ver = args[0], args[1]
		}
	}
	block := "" // the verb of the block the line is in
	for line := range strings.Lines(string(gomod)) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		f := modFields(line)
		switch {
		case len(f) == 0:
		case block != "" && f[0] == ")":
			block = ""
		case block != "":
			directive(block, f)
		case len(f) == 2 && f[1] == "(":
			block = f[0]
		default:
			directive(f[0], f[1:])
		}
	}
	if replaced[mod] {
		return "", ""
	}
	return mod, ver
}

// modFields are the words of a go.mod line, a quoted one unquoted.
func modFields(line string) []string {
	f := strings.Fields(line)
	for i, w := range f {
		if strings.HasPrefix(w, `"`) || strings.HasPrefix(w, "`") {
			if u, err := strconv.Unquote(w); err == nil {
				f[i] = u
			}
		}
	}
	return f
}

// inModCache reports whether the module cache holds mod at ver, unpacked
// as the go command leaves it (capitals escaped as "!" and the letter).
func inModCache(cache, mod, ver string) bool {
	_, err := os.Stat(filepath.Join(cache, filepath.FromSlash(escapeModPath(mod))+"@"+escapeModPath(ver)))
	return err == nil
}

func escapeModPath(s string) string {
	var b strings.Builder
	for _, r := range s {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// inGoSum reports whether go.sum's text has the hash of mod's code at
// ver (not only of its go.mod), which a plain `go mod download` needs.
func inGoSum(gosum []byte, mod, ver string) bool {
	for line := range strings.Lines(string(gosum)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == mod && f[1] == ver {
			return true
		}
	}
	return false
}

// goModFile is the go.mod of the module holding file: the nearest above
// it within the workspace, "" when there is none.
func goModFile(ws, file string) string {
	for dir := filepath.Dir(file); fsutil.Within(ws, dir); dir = filepath.Dir(dir) {
		if p := filepath.Join(dir, "go.mod"); fileExists(p) {
			return p
		}
		if dir == ws {
			break
		}
	}
	return ""
}

// fileExists reports whether p is a regular file, not a link: a go.mod
// that leads elsewhere is not the workspace's to read.
func fileExists(p string) bool {
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// missingModule is the module, and its version, that gopls's
// diagnostic msg on file shows missing from the module cache it reads:
// one that the go.mod of file's module (in folder dir) requires and the
// cache (where the cache is named) lacks. ok is false for any other
// message, and for a server other than gopls or one allowed hosts (it
// can download what it lacks).
func (p *Pool) missingModule(s Server, file, msg string) (mod, ver, dir string, ok bool) {
	if s.toolchain() != "go" || len(s.AllowedHosts) > 0 {
		return "", "", "", false
	}
	pkg := unprovidedImport(msg)
	if pkg == "" {
		return "", "", "", false
	}
	gomod := goModFile(p.ws, file)
	if gomod == "" {
		return "", "", "", false
	}
	text, err := os.ReadFile(gomod)
	if err != nil {
		return "", "", "", false
	}
	if mod, ver = requiredModule(text, pkg); mod == "" {
		return "", "", "", false
	}
	if cache := goModCache(envMap(p.env)); cache != "" && inModCache(cache, mod, ver) {
		return "", "", "", false
	}
	return mod, ver, filepath.Dir(gomod), true
}

// moduleFix says, for the diagnostics ds of file, that gemkit runs gopls
// without network and what to do, when some show a module missing from
// the module cache (missingModule); "" otherwise. It goes beside the
// diagnostics (FileDiagnostics.Fix) rather than into a message, which an
// answer cuts short.
func (p *Pool) moduleFix(s Server, file string, ds []codeintel.Diagnostic) string {
	var mods, named []string
	dir := ""
	for _, d := range ds {
		mod, ver, at, ok := p.missingModule(s, file, d.Message)
		if !ok || slices.Contains(mods, mod+"@"+ver) {
			continue
		}
		dir = at
		mods = append(mods, mod+"@"+ver)
		if sum, _ := os.ReadFile(filepath.Join(dir, "go.sum")); !inGoSum(sum, mod, ver) {
			named = append(named, mod) // `go mod download` records its hash in go.sum only when named
		}
	}
	if len(mods) == 0 {
		return ""
	}
	cache := goModCache(envMap(p.env))
	if cache == "" {
		return noModCacheFix(dir)
	}
	cmd := strings.Join(append([]string{"go mod download"}, named...), " ")
	return fmt.Sprintf("gemkit runs gopls in its sandbox without network, so it cannot download %s, which the module cache it reads (%s) lacks: run `%s` in %s yourself, or let gopls download by naming proxy.golang.org and sum.golang.org in its allowedHosts (docs/code-intel.md)",
		strings.Join(mods, ", "), cache, cmd, dir)
}
