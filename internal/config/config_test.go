package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// section is a stand-in owner's section, decoded strictly.
type section struct {
	Model    string `json:"model"`
	MaxTurns int    `json:"maxTurns"`
	Servers  []struct {
		Name    string   `json:"name"`
		Command []string `json:"command"`
	} `json:"languageServers"`
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string // body "-" is no file
		model      string // the model section, re-encoded
		codeIntel  string
		err        string // "" is no error; else a part of it
	}{
		{name: "missing", body: "-"},
		{name: "null", body: "null"},
		{name: "empty object", body: "{}", model: "{}"},
		{name: "both sections", body: `{"model": "m", "codeIntel": {"idleTimeout": "1m"}}`, model: `{"model":"m"}`, codeIntel: `{"idleTimeout": "1m"}`},
		{name: "model only", body: `{"maxTurns": 3}`, model: `{"maxTurns":3}`},
		{name: "codeIntel only", body: `{"codeIntel": {}}`, model: "{}", codeIntel: "{}"},
		{name: "empty", body: " \n", err: "empty: write {} or remove the file"},
		{name: "syntax", body: "{\n  \"model\": \"m\",\n  \"maxTurns\": 3,\n}", err: "line 4, column 1: invalid character '}' looking for beginning of object key string"},
		{name: "bare word", body: "{\"model\": m}", err: "line 1, column 11: invalid character 'm'"},
		{name: "truncated", body: `{"model": "m"`, err: "the JSON ends early"},
		{name: "list", body: `[1]`, err: "want a JSON object, got a list"},
		{name: "trailing", body: "{}\n{}", err: ":2:1: more after the config object"},
		{name: "folder", body: "/", err: "is not a regular file"},
		{name: "too large", body: `{"model": "` + strings.Repeat("m", MaxSize) + `"}`, err: "larger than 1048576 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			switch c.body {
			case "-":
			case "/":
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Read(p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), p) {
					t.Fatalf("err = %v, want %s naming the file", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Path != p || string(f.Model) != c.model || string(f.CodeIntel) != c.codeIntel {
				t.Errorf("got %+v (model %s, codeIntel %s), want model %s, codeIntel %s", f, f.Model, f.CodeIntel, c.model, c.codeIntel)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, raw, section, err string
		want                    section
	}{
		{name: "absent", raw: ""},
		{name: "null", raw: "null"},
		{name: "valid", raw: `{"model": "m", "maxTurns": 2}`, want: section{Model: "m", MaxTurns: 2}},
		{name: "unknown top-level", raw: `{"modle": "m"}`, err: `config.json: unknown field "modle"`},
		{name: "unknown in section", raw: `{"languageServer": []}`, section: "codeIntel", err: `config.json: codeIntel: unknown field "languageServer"`},
		{name: "wrong type", raw: `{"maxTurns": "3"}`, err: `config.json: maxTurns: want a number, got a string`},
		{name: "wrong type deep", raw: `{"languageServers": [{"name": "x", "command": "x"}]}`, section: "codeIntel",
			err: `config.json: codeIntel: languageServers.command: want a list, got a string`},
		{name: "not an object", raw: `[1]`, section: "codeIntel", err: "config.json: codeIntel: want an object, got a list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got section
			err := Decode(json.RawMessage(c.raw), "config.json", c.section, &got)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("err = %v, want %s", err, c.err)
				}
				return
			}
			if err != nil || got.Model != c.want.Model || got.MaxTurns != c.want.MaxTurns {
				t.Errorf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestPath(t *testing.T) {
	if p, err := Path("/x/c.json"); err != nil || p != "/x/c.json" {
		t.Errorf("flag: %s %v", p, err)
	}
	if runtime.GOOS != "linux" {
		return // the default folder is the system's own
	}
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	t.Setenv("HOME", "/home/u")
	if p, err := Path(""); err != nil || p != "/cfg/gemkit/config.json" {
		t.Errorf("default: %s %v", p, err)
	}
}
