package model

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		msg    string
		kind   Kind
	}{
		{429, "Too many requests", KindQuota},
		{400, "RESOURCE_EXHAUSTED: quota exceeded", KindQuota},
		{401, "bad key", KindAuth},
		{400, "API key not valid. Please pass a valid API key.", KindAuth},
		{403, "PERMISSION_DENIED", KindAuth},
		{404, "models/x is not found", KindNotFound},
		{400, "invalid argument", KindBadReq},
		{503, "overloaded", KindServer},
		{0, "connection refused", KindNetwork},
	}
	for _, c := range cases {
		e := classify(c.status, c.msg, "m at x", nil, "KEY")
		if e.Kind != c.kind || !strings.Contains(e.Error(), c.msg) || e.Hint == "" {
			t.Errorf("%d %q: %s (%s)", c.status, c.msg, e.Kind, e.Error())
		}
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if c, err := LoadConfig(p); err != nil || c != (Config{}) {
		t.Fatalf("missing file: %+v %v", c, err)
	}
	os.WriteFile(p, []byte(`{"model": "a", "toolProtocol": "text", "maxTurns": 3}`), 0o644)
	c, err := LoadConfig(p)
	if err != nil || c.Model != "a" || c.ToolProtocol != "text" || c.MaxTurns != 3 {
		t.Fatalf("%+v %v", c, err)
	}
	m := c.Merge(Config{Model: "b", BaseURL: "http://h/v1"})
	if m.Model != "b" || m.Provider != ProviderOpenAI || m.ToolProtocol != "text" || m.MaxTurns != 3 {
		t.Errorf("merged %+v", m)
	}
	os.WriteFile(p, []byte(`{"maxAttempts": 3, "retryDelay": "2s", "retryMaxWait": "1m"}`), 0o644)
	c, err = LoadConfig(p)
	r, rerr := c.Merge(Config{MaxAttempts: 4}).Retry()
	if err != nil || rerr != nil || r.MaxAttempts != 4 || r.InitialDelay != 2*time.Second || r.MaxWait != time.Minute {
		t.Errorf("retry %+v %v %v", r, err, rerr)
	}
}

// TestConfigFileErrors: every way the model's section of a config file
// can be wrong is an error that names the file and what is wrong.
func TestConfigFileErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.json")
	for _, c := range []struct{ body, want string }{
		{`{"provider": "claude"}`, p + `: provider "claude": use "gemini" or "openai"`},
		{`{"toolProtocol": "xml"}`, p + `: tool protocol "xml": use native or text`},
		{`{"modle": "x"}`, p + `: unknown field "modle"`},
		{`{"maxTurns": "3"}`, p + `: maxTurns: want a number, got a string`},
		{`[1]`, p + `: want a JSON object, got a list`},
		{"{\n\"model\": \"a\",\n}", p + `: line 3, column 1: invalid character '}' looking for beginning of object key string`},
		{`{"maxAttempts": -1}`, p + `: max attempts -1: use 1 or more (1 turns retries off)`},
		{`{"retryDelay": "soon"}`, p + `: retry delay "soon": use a positive Go duration such as 5s or 10m`},
		{`{"retryMaxWait": "-1m"}`, p + `: retry max wait "-1m": use a positive Go duration such as 5s or 10m`},
	} {
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p); err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %s", c.body, err, c.want)
		}
	}
	// The codeIntel object is langserver's: the model's section leaves it
	// alone, whatever it holds.
	if err := os.WriteFile(p, []byte(`{"model": "m", "codeIntel": {"anything": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadConfig(p); err != nil || c.Model != "m" {
		t.Errorf("with codeIntel: %+v %v", c, err)
	}
}

func TestOpen(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	ctx := context.Background()
	if _, err := Open(ctx, Config{}, env(nil)); err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY") {
		t.Errorf("no key: %v", err)
	}
	m, err := Open(ctx, Config{}, env(map[string]string{"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"}))
	if err != nil || m.Describe() != DefaultGeminiModel+" at http://127.0.0.1:9" {
		t.Errorf("gemini: %v %v", m, err)
	}
	m, err = Open(ctx, Config{BaseURL: "http://127.0.0.1:9/v1", Model: "q"}, env(nil))
	if err != nil || m.Describe() != "q at http://127.0.0.1:9/v1" {
		t.Errorf("openai: %v %v", m, err)
	}
	if _, err := Open(ctx, Config{BaseURL: "http://127.0.0.1:9/v1"}, env(nil)); err == nil {
		t.Error("an OpenAI endpoint without a model name was accepted")
	}
}
