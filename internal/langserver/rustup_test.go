package langserver

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/envmap"
)

// rustupLayout is a fake rustup installation: cargo/bin/rustup (a
// script that fails, as nothing here may run it) with rust-analyzer
// beside it, and rustup's home with its settings and toolchains.
type rustupLayout struct {
	// link makes cargo/bin/rust-analyzer from cargo/bin/rustup: a
	// symbolic or hard link; nil writes a program of its own.
	link func(oldname, newname string) error
	// target names rustup's program, when not "rustup".
	target string
	// settings is rustup's settings.toml.
	settings string
	// toolchains are the toolchains installed, each with rust-analyzer
	// in its bin folder or not.
	toolchains map[string]bool
	// files are written in the workspace (rust-toolchain.toml).
	files map[string]string
	// env is added to the environment.
	env []string
}

const host = "x86_64-unknown-linux-gnu"

func (l rustupLayout) make(t *testing.T) (ws string, environ []string) {
	t.Helper()
	root := t.TempDir()
	ws = filepath.Join(root, "ws")
	bin := filepath.Join(root, "cargo", "bin")
	home := filepath.Join(root, "rustup")
	for _, d := range []string{ws, bin, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := l.target
	if target == "" {
		target = "rustup"
	}
	write(t, filepath.Join(bin, target), "#!/bin/sh\necho 'error: this test runs no rustup' >&2\nexit 1\n", 0o755)
	ra := filepath.Join(bin, "rust-analyzer")
	if l.link == nil {
		write(t, ra, "#!/bin/sh\n", 0o755)
	} else if err := l.link(target, ra); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(home, "settings.toml"), l.settings, 0o644)
	for name, has := range l.toolchains {
		tbin := filepath.Join(home, "toolchains", name, "bin")
		write(t, filepath.Join(tbin, "rustc"), "#!/bin/sh\n", 0o755)
		if has {
			write(t, filepath.Join(tbin, "rust-analyzer"), "#!/bin/sh\n", 0o755)
		}
	}
	for name, text := range l.files {
		write(t, filepath.Join(ws, name), text, 0o644)
	}
	environ = append([]string{"PATH=" + bin, "HOME=" + root, "RUSTUP_HOME=" + home, "RUSTUP_TOOLCHAIN="}, l.env...)
	return ws, environ
}

func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// symlink links as rustup's installer does: a relative link beside
// rustup.
func symlink(oldname, newname string) error { return os.Symlink(oldname, newname) }

func hardlink(oldname, newname string) error {
	return os.Link(filepath.Join(filepath.Dir(newname), oldname), newname)
}

// rust-analyzer on PATH that is rustup's proxy is installed only when
// the toolchain rustup would use has the component: otherwise the code
// tools' answer says to add it, where starting it would give rustup's
// "Unknown binary" error.
func TestRustupProxy(t *testing.T) {
	stable := `version = "12"
default_host_triple = "` + host + `"
default_toolchain = "stable-` + host + `"
profile = "default"

[overrides]
`
	cases := []struct {
		name   string
		layout rustupLayout
		// want is in the answer's error; "" wants rust-analyzer found.
		want string
	}{
		{"symlink, no component", rustupLayout{link: symlink, settings: stable, toolchains: map[string]bool{"stable-" + host: false}},
			"only rustup's proxy: rustup's toolchain stable-" + host + " has no rust-analyzer component) — install it with: rustup component add rust-analyzer"},
		{"hard link, no component", rustupLayout{link: hardlink, settings: stable, toolchains: map[string]bool{"stable-" + host: false}},
			"install it with: rustup component add rust-analyzer"},
		{"link to rustup-init, no component", rustupLayout{link: symlink, target: "rustup-init", settings: stable, toolchains: map[string]bool{"stable-" + host: false}},
			"install it with: rustup component add rust-analyzer"},
		{"symlink, component", rustupLayout{link: symlink, settings: stable, toolchains: map[string]bool{"stable-" + host: true}}, ""},
		{"hard link, component", rustupLayout{link: hardlink, settings: stable, toolchains: map[string]bool{"stable-" + host: true}}, ""},
		{"rust-analyzer of its own", rustupLayout{settings: stable, toolchains: map[string]bool{"stable-" + host: false}}, ""},
		{"short default name", rustupLayout{link: symlink, settings: "default_host_triple = '" + host + "'\ndefault_toolchain = \"stable\"\n",
			toolchains: map[string]bool{"stable-" + host: false}},
			"toolchain stable-" + host + " has no rust-analyzer component"},
		{"RUSTUP_TOOLCHAIN without it", rustupLayout{link: symlink, settings: stable, env: []string{"RUSTUP_TOOLCHAIN=nightly"},
			toolchains: map[string]bool{"stable-" + host: true, "nightly-" + host: false}},
			"install it with: rustup component add rust-analyzer --toolchain nightly"},
		{"RUSTUP_TOOLCHAIN with it", rustupLayout{link: symlink, settings: stable, env: []string{"RUSTUP_TOOLCHAIN=nightly"},
			toolchains: map[string]bool{"stable-" + host: false, "nightly-" + host: true}}, ""},
		{"rust-toolchain.toml without it", rustupLayout{link: symlink, settings: stable,
			files:      map[string]string{"rust-toolchain.toml": "[toolchain]\nchannel = \"nightly\" # for the 2024 edition\ncomponents = [\"rustfmt\"]\n"},
			toolchains: map[string]bool{"stable-" + host: true, "nightly-" + host: false}},
			"rustup component add rust-analyzer --toolchain nightly"},
		{"rust-toolchain.toml with it", rustupLayout{link: symlink, settings: stable,
			files:      map[string]string{"rust-toolchain.toml": "[toolchain]\nchannel = 'nightly'\n"},
			toolchains: map[string]bool{"stable-" + host: false, "nightly-" + host: true}}, ""},
		{"old rust-toolchain file", rustupLayout{link: symlink, settings: stable, files: map[string]string{"rust-toolchain": "1.80.0\n"},
			toolchains: map[string]bool{"stable-" + host: true, "1.80.0-" + host: false}},
			"rustup component add rust-analyzer --toolchain 1.80.0"},
		{"toolchain not installed", rustupLayout{link: symlink, settings: stable, env: []string{"RUSTUP_TOOLCHAIN=beta"},
			toolchains: map[string]bool{"stable-" + host: false}}, ""},
		{"no settings", rustupLayout{link: symlink, toolchains: map[string]bool{"stable-" + host: false}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, environ := c.layout.make(t)
			err := Check(Builtin(), Look(ws, environ), "", filepath.Join(ws, "src", "main.rs"))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("rust-analyzer not found: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v\nwant %q in it", err, c.want)
			}
		})
	}
}

// Where settings.toml does not name the host, rustup's toolchains are
// named for the host gemkit runs on.
func TestRustupHostTriple(t *testing.T) {
	here := hostTriple()
	if here == "" {
		t.Skipf("gemkit guesses no rustup host triple for %s/%s (it knows linux and darwin on amd64 and arm64, where CI runs)", runtime.GOOS, runtime.GOARCH)
	}
	ws, environ := rustupLayout{link: symlink, settings: `default_toolchain = "stable"`, toolchains: map[string]bool{"stable-" + here: false}}.make(t)
	err := Check(Builtin(), Look(ws, environ), "", filepath.Join(ws, "main.rs"))
	if want := "toolchain stable-" + here + " has no rust-analyzer component"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q in it", err, want)
	}
}

// A directory override of settings.toml is keyed by the folder, with
// the TOML quoting of a path.
func TestRustupOverride(t *testing.T) {
	l := rustupLayout{link: symlink, toolchains: map[string]bool{"stable-" + host: true, "nightly-" + host: false}}
	ws, environ := l.make(t)
	settings := filepath.Join(envmap.Of(environ)["RUSTUP_HOME"], "settings.toml")
	write(t, settings, "default_toolchain = \"stable-"+host+"\"\n\n[overrides]\n"+strconv.Quote(filepath.Dir(ws))+" = \"nightly-"+host+"\"\n", 0o644)
	err := Check(Builtin(), Look(ws, environ), "", filepath.Join(ws, "lib.rs"))
	if want := "rustup component add rust-analyzer --toolchain nightly-" + host; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q in it", err, want)
	}
}

// A Pool finds its servers as Look does: asked about a Rust file, it
// answers with the fix, and starts nothing (the fake rustup would fail).
func TestPoolRustupProxy(t *testing.T) {
	ws, environ := rustupLayout{link: symlink, settings: `default_toolchain = "stable-` + host + `"`,
		toolchains: map[string]bool{"stable-" + host: false}}.make(t)
	p, err := New(Options{Workspace: ws, Env: environ})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = p.serverFor(filepath.Join(ws, "src", "main.rs"))
	if want := "install it with: rustup component add rust-analyzer"; !codeintel.IsNoServer(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant a NoServerError with %q", err, want)
	}
	if s := p.Servers(); len(s) != 0 {
		t.Errorf("an entry was made for the server: %+v", s)
	}
}
