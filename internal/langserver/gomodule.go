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

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/envmap"
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
// its version; "" when none does, when go.mod cannot be read, or when a
// replace directive names that module: its code then need not come from
// the module cache.
func requiredModule(gomod []byte, pkg string) (mod, ver string) {
	f, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", ""
	}
	for _, r := range f.Require {
		p := r.Mod.Path
		if len(p) > len(mod) && (pkg == p || strings.HasPrefix(pkg, p+"/")) {
			mod, ver = p, r.Mod.Version
		}
	}
	for _, r := range f.Replace {
		if r.Old.Path == mod {
			return "", ""
		}
	}
	return mod, ver
}

// inModCache reports whether the module cache holds mod at ver, unpacked
// as the go command leaves it (module.EscapePath's form).
func inModCache(cache, mod, ver string) bool {
	p, err := module.EscapePath(mod)
	if err != nil {
		return false
	}
	v, err := module.EscapeVersion(ver)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(cache, filepath.FromSlash(p)+"@"+v))
	return err == nil
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
// it within the workspace, "" when there is none. Only a regular file
// counts: a go.mod that is a link is not the workspace's to read.
func goModFile(ws, file string) string {
	for dir := filepath.Dir(file); fsutil.Within(ws, dir); dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "go.mod")
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
		if dir == ws {
			break
		}
	}
	return ""
}

// goModMax and goSumMax bound what of go.mod and go.sum is read: far
// more than any real module's.
const goModMax, goSumMax = 1 << 20, 16 << 20

// moduleFix says, for the diagnostics ds of file, that gemkit runs gopls
// without network and what to do, when some show a module missing from
// the module cache: one that the go.mod of file's module requires and
// the cache (where the cache is named) lacks, for gopls with no allowed
// hosts (with them it downloads what it lacks); "" otherwise. It goes
// beside the diagnostics (FileDiagnostics.Fix) rather than into a
// message, which an answer cuts short. go.mod and go.sum are read once,
// and only when a diagnostic has gopls's words for a missing package.
func (p *Pool) moduleFix(s Server, file string, ds []codeintel.Diagnostic) string {
	if s.toolchain() != "go" || len(s.AllowedHosts) > 0 {
		return ""
	}
	var pkgs []string
	for _, d := range ds {
		if pkg := unprovidedImport(d.Message); pkg != "" {
			pkgs = append(pkgs, pkg)
		}
	}
	if len(pkgs) == 0 {
		return ""
	}
	gomod := goModFile(p.ws, file)
	if gomod == "" {
		return ""
	}
	text, err := readLimited(p.ws, gomod, goModMax)
	if err != nil {
		return ""
	}
	cache := goModCache(envmap.Of(p.env))
	dir := filepath.Dir(gomod)
	var mods, named []string
	var sum []byte
	sumRead := false
	for _, pkg := range pkgs {
		mod, ver := requiredModule(text, pkg)
		if mod == "" || slices.Contains(mods, mod+"@"+ver) || cache != "" && inModCache(cache, mod, ver) {
			continue
		}
		mods = append(mods, mod+"@"+ver)
		if !sumRead {
			sum, _ = readLimited(p.ws, filepath.Join(dir, "go.sum"), goSumMax)
			sumRead = true
		}
		if !inGoSum(sum, mod, ver) {
			named = append(named, mod) // `go mod download` records its hash in go.sum only when named
		}
	}
	if len(mods) == 0 {
		return ""
	}
	if cache == "" {
		return noModCacheFix(dir)
	}
	cmd := strings.Join(append([]string{"go mod download"}, named...), " ")
	return fmt.Sprintf("gemkit runs gopls in its sandbox without network, so it cannot download %s, which the module cache it reads (%s) lacks: run `%s` in %s yourself, or let gopls download by naming proxy.golang.org and sum.golang.org in its allowedHosts (docs/code-intel.md)",
		strings.Join(mods, ", "), cache, cmd, dir)
}
