// Rustup's proxies: rust-analyzer on PATH that is not installed.
//
// rustup puts cargo, rustc, rust-analyzer and the rest in ~/.cargo/bin as
// links to itself, whether or not the toolchain has the component each
// runs. Started, a proxy without its component prints rustup's "Unknown
// binary 'rust-analyzer' in official toolchain ..." and exits, so finding
// rust-analyzer on PATH does not say it is installed. gemkit runs nothing
// to find out (it starts no program for a workspace outside its sandbox):
// it reads rustup's files as rustup would to choose the toolchain.

package langserver

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/gemkit/gemkit/internal/envmap"
)

// MissingComponentError is a server's program found on PATH that is
// rustup's proxy for a component the toolchain rustup would run it from
// does not have.
type MissingComponentError struct {
	// Proxy is the program found on PATH.
	Proxy string
	// Component is the missing component ("rust-analyzer").
	Component string
	// Toolchain is the toolchain rustup would use ("stable-x86_64-unknown-linux-gnu").
	Toolchain string
	// Fix is the command that adds the component.
	Fix string
}

func (e *MissingComponentError) Error() string {
	return fmt.Sprintf("%s is only rustup's proxy: rustup's toolchain %s has no %s component", e.Proxy, e.Toolchain, e.Component)
}

// RustupLook wraps look: a program it finds that is rustup's proxy for a
// component missing from the toolchain rustup would use in the workspace
// ws (with the environment environ) is not found, a
// *MissingComponentError saying how to add it.
func RustupLook(look LookPath, ws string, environ []string) LookPath {
	env := envmap.Of(environ)
	return func(file string) (string, error) {
		p, err := look(file)
		if err != nil || !isRustupProxy(p) {
			return p, err
		}
		if err := proxyComponent(p, ws, env); err != nil {
			return "", err
		}
		return p, nil
	}
}

// rustupNames are the names rustup's own program has: rustup's installer
// is rustup-init, and some packagers link the proxies to it.
var rustupNames = map[string]bool{"rustup": true, "rustup-init": true}

// isRustupProxy reports whether the program at p is rustup under another
// name: a symbolic link to a file named rustup or rustup-init, or the same
// file as the rustup beside it (rustup makes hard links where it cannot
// make symbolic ones).
func isRustupProxy(p string) bool {
	if rustupNames[filepath.Base(p)] {
		return false // rustup itself, as a server's command names it
	}
	if real, err := filepath.EvalSymlinks(p); err == nil && rustupNames[filepath.Base(real)] {
		return true
	}
	fi, err := os.Stat(p)
	if err != nil {
		return false
	}
	for n := range rustupNames {
		if r, err := os.Stat(filepath.Join(filepath.Dir(p), n)); err == nil && os.SameFile(fi, r) {
			return true
		}
	}
	return false
}

// proxyComponent returns a *MissingComponentError when the toolchain
// rustup would run the proxy p from in ws has no program of p's name in
// its bin folder, where rustup looks for it. A toolchain gemkit cannot
// tell, or one not installed (rustup may install it when run), is given
// the benefit of the doubt: nil.
func proxyComponent(p, ws string, env map[string]string) error {
	home := env["RUSTUP_HOME"]
	if !filepath.IsAbs(home) {
		if h := env["HOME"]; filepath.IsAbs(h) {
			home = filepath.Join(h, ".rustup")
		}
	}
	if home == "" {
		return nil
	}
	settings := readSettings(filepath.Join(home, "settings.toml"))
	name, chosen := rustupToolchain(settings, ws, env)
	dir := toolchainDir(home, name, settings.DefaultHostTriple)
	if dir == "" {
		return nil
	}
	component := filepath.Base(p)
	if _, err := os.Stat(filepath.Join(dir, "bin", component)); err == nil {
		return nil
	}
	fix := "rustup component add " + component
	switch {
	case filepath.IsAbs(name):
		// A custom toolchain (rustup toolchain link): rustup adds
		// nothing to it.
		fix = "put " + component + " in " + filepath.Join(dir, "bin")
	case chosen:
		fix += " --toolchain " + name
	}
	return &MissingComponentError{Proxy: p, Component: component, Toolchain: filepath.Base(dir), Fix: fix}
}

// rustupToolchain is the toolchain rustup would use in ws, chosen as
// rustup chooses it: RUSTUP_TOOLCHAIN; else, from ws up, the first folder
// with an override (settings.toml's [overrides], then a rust-toolchain or
// rust-toolchain.toml file); else settings.toml's default_toolchain.
// chosen says it is not the default, which `rustup component add` would
// change unless told.
func rustupToolchain(settings rustupSettings, ws string, env map[string]string) (name string, chosen bool) {
	if v := env["RUSTUP_TOOLCHAIN"]; v != "" {
		return v, true
	}
	for d := ws; filepath.IsAbs(d); d = filepath.Dir(d) {
		if v := settings.Overrides[d]; v != "" {
			return v, true
		}
		if v := toolchainFile(ws, d); v != "" {
			return v, true
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return settings.DefaultToolchain, false
}

// toolchainFile is the toolchain a rust-toolchain or rust-toolchain.toml
// file in dir names (its channel, or its path made absolute), or "". The
// old rust-toolchain file may hold a bare name.
func toolchainFile(ws, dir string) string {
	for _, f := range []string{"rust-toolchain", "rust-toolchain.toml"} {
		b, err := readLimited(ws, filepath.Join(dir, f), rustupFileMax)
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(b)); f == "rust-toolchain" && !strings.ContainsAny(s, "=[\n") {
			return s
		}
		var t struct {
			Toolchain struct {
				Channel string `toml:"channel"`
				Path    string `toml:"path"`
			} `toml:"toolchain"`
		}
		if _, err := toml.Decode(string(b), &t); err != nil {
			continue
		}
		if p := t.Toolchain.Path; p != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			return p
		}
		return t.Toolchain.Channel
	}
	return ""
}

// toolchainDir is the installed toolchain's folder: name itself when it is
// a path (a custom toolchain), else RUSTUP_HOME/toolchains/<name>, or the
// same with the host's triple added, as rustup names an installed
// "stable". "" when there is none.
func toolchainDir(home, name, host string) string {
	if name == "" {
		return ""
	}
	cands := []string{name}
	if !filepath.IsAbs(name) {
		if host == "" {
			host = hostTriple()
		}
		cands = []string{filepath.Join(home, "toolchains", name)}
		if host != "" && !strings.HasSuffix(name, "-"+host) {
			cands = append(cands, filepath.Join(home, "toolchains", name+"-"+host))
		}
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
	}
	return ""
}

// hostTriple is the target triple rustup installs toolchains for here,
// when settings.toml does not say: the common ones only.
func hostTriple() string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	sys := map[string]string{"linux": "unknown-linux-gnu", "darwin": "apple-darwin"}[runtime.GOOS]
	if arch == "" || sys == "" {
		return ""
	}
	return arch + "-" + sys
}

// rustupFileMax bounds what is read of rustup's settings and of a
// toolchain file: far more than either holds.
const rustupFileMax = 1 << 20

// rustupSettings is what of rustup's settings.toml chooses a toolchain.
type rustupSettings struct {
	DefaultToolchain  string            `toml:"default_toolchain"`
	DefaultHostTriple string            `toml:"default_host_triple"`
	Overrides         map[string]string `toml:"overrides"` // folder → toolchain
}

// readSettings reads RUSTUP_HOME's settings.toml; a file that cannot be
// read or decoded gives no settings (the check then gives the benefit of
// the doubt).
func readSettings(path string) rustupSettings {
	var st rustupSettings
	if b, err := readLimited("", path, rustupFileMax); err == nil {
		if _, err := toml.Decode(string(b), &st); err != nil {
			return rustupSettings{}
		}
	}
	return st
}
