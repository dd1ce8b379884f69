package langserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/envmap"
)

// The Go profile: no network means GOPROXY=off and the person's module
// cache read-only; allowed hosts mean a module cache of the server's own
// fed first from the person's download folder. The person's tokens
// never reach a server, and a server's home and caches are its own.
func TestGoplsProfile(t *testing.T) {
	home, ws, cache, goBin := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(goBin, "go", "bin"), 0o755)
	goCmd := filepath.Join(goBin, "go", "bin", "go")
	os.WriteFile(goCmd, []byte("#!/bin/sh\n"), 0o755)
	gopls := filepath.Join(goBin, "gopls")
	os.WriteFile(gopls, []byte("\x7fELF"), 0o755)
	modcache := filepath.Join(home, "go", "pkg", "mod")
	os.MkdirAll(modcache, 0o755)
	environ := []string{"HOME=" + home, "PATH=" + filepath.Join(goBin, "go", "bin") + ":" + filepath.Join(ws, "bin") + ":relative",
		"GEMINI_API_KEY=secret", "GITHUB_TOKEN=secret", "GOFLAGS=-tags=x", "GOPROXY=https://corp.example/proxy", "LANG=C.UTF-8"}
	gs := Builtin()[0]
	for _, c := range []struct {
		name  string
		hosts []string
		want  map[string]string
		reads []string
	}{
		{"no network", nil, map[string]string{"GOPROXY": "off", "GOMODCACHE": modcache, "GOFLAGS": "-tags=x"}, []string{modcache}},
		{"module proxy allowed", []string{"proxy.golang.org", "sum.golang.org"}, map[string]string{
			"GOPROXY":    "file://" + filepath.Join(modcache, "cache", "download") + ",https://corp.example/proxy",
			"GOMODCACHE": filepath.Join(cache, "gopls", "gomodcache"), "GOFLAGS": "-tags=x -modcacherw"},
			[]string{filepath.Join(modcache, "cache", "download")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := gs
			s.AllowedHosts = c.hosts
			pr, err := buildProfile(s, gopls, ws, cache, environ)
			if err != nil {
				t.Fatal(err)
			}
			env := envmap.Of(pr.env)
			want := map[string]string{
				"HOME": filepath.Join(cache, "gopls", "home"), "GOCACHE": filepath.Join(cache, "gopls", "go-build"),
				"GOROOT": filepath.Join(goBin, "go"), "GOTOOLCHAIN": "local", "GOENV": "off",
				"PATH": filepath.Join(goBin, "go", "bin"), "LANG": "C.UTF-8",
			}
			for k, v := range c.want {
				want[k] = v
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			for _, k := range []string{"GEMINI_API_KEY", "GITHUB_TOKEN"} {
				if _, ok := env[k]; ok {
					t.Errorf("the server is given %s", k)
				}
			}
			for _, r := range append(c.reads, filepath.Join(goBin, "go")) {
				if !slices.Contains(pr.reads, r) {
					t.Errorf("reads %v lack %s", pr.reads, r)
				}
			}
			if pr.own != goBin || !slices.Equal(pr.hosts, c.hosts) || pr.cache != filepath.Join(cache, "gopls") {
				t.Errorf("own %s, hosts %v, cache %s", pr.own, pr.hosts, pr.cache)
			}
		})
	}
}

// A module cache reached through a link (a ~/go that links to another
// disk) is given to gopls by its real path, the one the sandbox opens:
// through the link, gopls found no module and answered that the
// workspace declared nothing.
func TestGoplsProfileLinkedModCache(t *testing.T) {
	home, elsewhere, ws, cache, goBin := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(goBin, "go", "bin"), 0o755)
	os.WriteFile(filepath.Join(goBin, "go", "bin", "go"), []byte("#!/bin/sh\n"), 0o755)
	gopls := filepath.Join(goBin, "gopls")
	os.WriteFile(gopls, []byte("\x7fELF"), 0o755)
	real := filepath.Join(elsewhere, "pkg", "mod")
	os.MkdirAll(real, 0o755)
	if err := os.Symlink(elsewhere, filepath.Join(home, "go")); err != nil {
		t.Fatal(err)
	}
	real, _ = filepath.EvalSymlinks(real)
	environ := []string{"HOME=" + home, "PATH=" + filepath.Join(goBin, "go", "bin")}
	pr, err := buildProfile(Builtin()[0], gopls, ws, cache, environ)
	if err != nil {
		t.Fatal(err)
	}
	if got := envmap.Of(pr.env)["GOMODCACHE"]; got != real {
		t.Errorf("GOMODCACHE = %q, want the real path %q", got, real)
	}
	if !slices.Contains(pr.reads, real) {
		t.Errorf("reads %v lack %s", pr.reads, real)
	}
}

// A command that resolves into the workspace, a cache folder that is a
// link, are refused with what to do.
func TestProfileRefusals(t *testing.T) {
	home, ws, cache := t.TempDir(), t.TempDir(), t.TempDir()
	planted := filepath.Join(ws, "gopls")
	os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(t.TempDir(), "gopls")
	os.Symlink(planted, link)
	environ := []string{"HOME=" + home, "PATH=/usr/bin"}
	if _, err := buildProfile(Builtin()[0], link, ws, cache, environ); err == nil || !strings.Contains(err.Error(), "does not start a language server from there") {
		t.Errorf("a command in the workspace: %v", err)
	}
	ok := filepath.Join(t.TempDir(), "gopls")
	os.WriteFile(ok, []byte("#!/bin/sh\n"), 0o755)
	os.Symlink(home, filepath.Join(cache, "gopls"))
	if _, err := buildProfile(Builtin()[0], ok, ws, cache, environ); err == nil || !strings.Contains(err.Error(), "is not a folder of its own") {
		t.Errorf("a cache that is a link: %v", err)
	}
}

// TestReadRoots: the folders answers may quote are the profiles' reads
// and installations (the same list the sandbox opens), for the servers
// found outside the workspace and any virtualenv; working them out makes
// no cache folder.
func TestReadRoots(t *testing.T) {
	tmp, _ := filepath.EvalSymlinks(t.TempDir())
	ws, home, cache := filepath.Join(tmp, "ws"), filepath.Join(tmp, "home"), filepath.Join(tmp, "cache")
	exe := func(p, text string) string {
		p = filepath.Join(tmp, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(text), 0o755)
		return p
	}
	exe("usr/bin/gopls", "\x7fELF")
	exe("usr/bin/go", "\x7fELF")
	exe("opt/node/bin/node", "\x7fELF")
	exe("opt/node/lib/node_modules/typescript-language-server/package.json", "{}")
	cli := exe("opt/node/lib/node_modules/typescript-language-server/lib/cli.mjs", "#!/usr/bin/env node\n")
	os.Symlink(cli, filepath.Join(tmp, "opt", "node", "bin", "typescript-language-server"))
	exe("ws/.venv/bin/pyright-langserver", "#!/bin/sh\n")
	modcache := filepath.Join(tmp, "gomod")
	environ := []string{"HOME=" + home, "XDG_CACHE_HOME=" + cache, "GOMODCACHE=" + modcache, "VIRTUAL_ENV=" + filepath.Join(ws, ".venv"),
		"PATH=" + filepath.Join(ws, ".venv", "bin") + ":" + filepath.Join(tmp, "usr", "bin") + ":" + filepath.Join(tmp, "opt", "node", "bin")}
	got := ReadRoots(Builtin(), ws, environ)
	want := []string{modcache, filepath.Join(tmp, "opt", "node"), filepath.Join(tmp, "opt", "node", "lib", "node_modules"), filepath.Join(tmp, "usr"), filepath.Join(tmp, "usr", "bin")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ReadRoots = %v, want %v", got, want)
	}
	if _, err := os.Stat(cache); !os.IsNotExist(err) {
		t.Errorf("ReadRoots made the cache folder %s (%v)", cache, err)
	}
}
