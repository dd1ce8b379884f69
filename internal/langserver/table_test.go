package langserver

import (
	"errors"
	"os"
	"path/filepath"
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
		{`{"languageServer": []}`, `config.json: codeIntel: json: unknown field "languageServer"`},
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

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if c, err := ConfigFile(p); err != nil || len(c.Servers) != 0 {
		t.Fatalf("missing file: %v %v", c, err)
	}
	os.WriteFile(p, []byte(`{"model": "m", "codeIntel": {"idleTimeout": "1m"}}`), 0o600)
	c, err := ConfigFile(p)
	if err != nil || c.IdleTimeout != "1m" {
		t.Fatalf("%v %v", c, err)
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
