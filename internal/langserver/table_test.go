package langserver

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConfigTable(t *testing.T) {
	c, err := ParseConfig([]byte(`{
		"languageServers": [
			{"name": "gopls", "command": ["/opt/go/bin/gopls", "-remote=auto"], "settings": {"gopls": {"staticcheck": true}}},
			{"name": "clangd", "disabled": true},
			{"name": "pylsp", "language": "Python", "extensions": {".py": "python"}, "command": ["pylsp"], "install": "pip install python-lsp-server"},
			{"name": "zls", "extensions": {".zig": "zig"}, "command": ["zls"]}
		],
		"idleTimeout": "2m"
	}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	table, err := c.Table()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range table {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "pylsp zls gopls typescript-language-server pyright basedpyright rust-analyzer" {
		t.Errorf("table: %s", got)
	}
	if table[2].Command[0] != "/opt/go/bin/gopls" || string(table[2].Settings) != `{"gopls": {"staticcheck": true}}` || table[2].Extensions[".go"] != "go" {
		t.Errorf("gopls entry: %+v", table[2])
	}
	if table[1].Language != "zls" {
		t.Errorf("a new entry without a language is named by its name: %+v", table[1])
	}
	idle, req, _ := c.Timeouts()
	if idle != 2*time.Minute || req != DefaultRequestTimeout {
		t.Errorf("timeouts %v %v", idle, req)
	}
	look := func(file string) (string, error) {
		if file == "pylsp" {
			return "", errors.New("not found")
		}
		return "/bin/" + file, nil
	}
	ch, _, err := choose(table, ".py", look)
	if err != nil || ch.server.Name != "pyright" {
		t.Errorf("a missing first choice gives way to the next: %v %v", ch.server.Name, err)
	}
	_, tried, err := choose(table, ".py", func(string) (string, error) { return "", errors.New("no") })
	if err == nil || len(tried) != 3 {
		t.Errorf("nothing on PATH: tried %d, %v", len(tried), err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"languageServer": []}`, `config.json: codeIntel: unknown field "languageServer"`},
		{`{"languageServers": [{"command": ["x"]}]}`, "config.json: codeIntel: languageServers[0] has no name"},
		{`{"languageServers": [{"name": "zls", "command": ["zls"]}]}`, "config.json: codeIntel: languageServers[0] (zls) is not a built-in server: it needs extensions and command"},
		{`{"languageServers": [{"name": "zls", "extensions": {"zig": "zig"}, "command": ["zls"]}]}`, `config.json: codeIntel: languageServers[0] (zls): extension "zig" must start with a dot`},
		{`{"idleTimeout": "soon"}`, `config.json: codeIntel: idleTimeout "soon": use a positive Go duration such as 30s or 10m`},
		{`{"languageServers": [{"name": "gopls", "allowedHosts": ["proxy golang org"]}]}`, `config.json: codeIntel: languageServers (gopls): allowedHosts: contains spaces`},
		{`{"requestTimeout": "-1s"}`, `config.json: codeIntel: requestTimeout "-1s": use a positive Go duration such as 30s or 10m`},
	} {
		_, err := ParseConfig([]byte(c.in), "config.json")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %s", c.in, err, c.want)
		}
	}
}

// TestConfigFile: the codeIntel object of missing, valid, malformed and
// unknown-field files.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string // body "" is no file
		idle, err  string
	}{
		{name: "missing"},
		{name: "without codeIntel", body: `{"model": "m"}`},
		{name: "valid", body: `{"model": "m", "codeIntel": {"idleTimeout": "1m"}}`, idle: "1m"},
		{name: "unknown top-level field", body: `{"modle": "m", "codeIntel": {"idleTimeout": "1m"}}`, idle: "1m"},
		{name: "unknown codeIntel field", body: `{"codeIntel": {"idleTimout": "1m"}}`, err: `codeIntel: unknown field "idleTimout"`},
		{name: "wrong type", body: `{"codeIntel": {"languageServers": {}}}`, err: "codeIntel: languageServers: want a list, got an object"},
		{name: "malformed", body: "{\"codeIntel\": {\n\"idleTimeout\": 1m}}", err: "line 2, column 17: invalid character 'm' after object key:value pair"},
		{name: "bad value", body: `{"codeIntel": {"requestTimeout": "0s"}}`, err: `codeIntel: requestTimeout "0s": use a positive Go duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if c.body != "" {
				os.WriteFile(p, []byte(c.body), 0o600)
			}
			got, err := ConfigFile(p)
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), p+": ") || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %s: %s", err, p, c.err)
				}
				return
			}
			if err != nil || got.IdleTimeout != c.idle {
				t.Fatalf("%+v %v, want idleTimeout %q", got, err, c.idle)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "cmd/x/main.go", "web/app.tsx", "node_modules/lib/index.js", ".git/hooks/x.py", "vendor/v.rs"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	exts, markers := detect(dir)
	var names []string
	for _, s := range present(Builtin(), exts, markers) {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); got != "gopls typescript-language-server" {
		t.Errorf("present: %s (exts %v)", got, exts)
	}
}

// Each built-in server's Install is a command, as the answer for a
// language without its server prints it: "clangd — install it with:
// apt-get install clangd", not "install it with: install clangd …".
func TestBuiltinInstall(t *testing.T) {
	for _, s := range Builtin() {
		if first, _, _ := strings.Cut(s.Install, " "); !slices.Contains([]string{"go", "npm", "pip", "rustup", "apt-get"}, first) {
			t.Errorf("%s: install %q does not begin with a command", s.Name, s.Install)
		}
	}
}

// A server's program found only in the workspace (its node_modules/.bin
// on PATH) or an activated virtualenv is not started; the answer names
// it and why, besides how to install one gemkit starts, where "not
// installed" alone would contradict `gemkit codeintel servers`.
func TestCheckSkipped(t *testing.T) {
	ws, venv, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	wsBin, venvBin := filepath.Join(ws, "node_modules", ".bin"), filepath.Join(venv, "bin")
	for _, d := range []string{wsBin, venvBin} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "pyright-langserver"), []byte("#!/bin/sh\n"), 0o755)
	}
	file := filepath.Join(ws, "p.py")
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"in the workspace", map[string]string{"PATH": wsBin + ":" + elsewhere},
			"pyright-langserver (not " + filepath.Join(wsBin, "pyright-langserver") + ": gemkit starts no language server from the workspace or a virtualenv, which a tool may write) — install it with: npm install -g pyright"},
		{"in a virtualenv", map[string]string{"PATH": venvBin, "VIRTUAL_ENV": venv},
			"pyright-langserver (not " + filepath.Join(venvBin, "pyright-langserver") + ": gemkit starts no language server"},
		{"nowhere", map[string]string{"PATH": elsewhere},
			"pyright-langserver — install it with: npm install -g pyright"},
	}
	for _, c := range cases {
		err := Check(Builtin(), searchLook(c.env["PATH"], untrusted(ws, c.env)), "", file)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q in it", c.name, err, c.want)
		}
	}
}
