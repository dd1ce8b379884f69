package geminisettings

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestRedactedLikeGeminiCLI: the real Gemini CLI 0.61 starts the MCP
// servers of its settings (gemini mcp list does, to show their state)
// with the variables Redacted says it leaves out missing, unless the
// server's entry names them in its env ("$NAME", filled from Gemini
// CLI's own environment), and with the others.
func TestRedactedLikeGeminiCLI(t *testing.T) {
	node, interop := gemkittest.Interop(t, "@google/gemini-cli/package.json")
	home := t.TempDir()
	dump := filepath.Join(home, "dump.js")
	os.WriteFile(dump, []byte(`const out = {};
for (const k of ["TFE_TOKEN", "TFE_ADDRESS", "GH_HOST", "MY_API_KEY", "DATABASE_URL", "CLOUDSDK_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS"]) out[k] = process.env[k] ?? null;
require("fs").writeFileSync(process.argv[2], JSON.stringify(out));
`), 0o644)
	plain, named := filepath.Join(home, "plain.json"), filepath.Join(home, "named.json")
	settings := fmt.Sprintf(`{"security": {"folderTrust": {"enabled": false}}, "mcpServers": {
 "plain": {"command": %q, "args": [%q, %q]},
 "named": {"command": %q, "args": [%q, %q], "env": {"TFE_TOKEN": "$TFE_TOKEN"}}}}`, node, dump, plain, node, dump, named)
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	if err := os.WriteFile(Path(home), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(interop, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js"), "mcp", "list")
	cmd.Dir = home
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TFE_TOKEN=tok-1234", "TFE_ADDRESS=https://tfe.example.com", "GH_HOST=github.example.com",
		"MY_API_KEY=k", "DATABASE_URL=postgres://db", "CLOUDSDK_CONFIG=/cfg", "GOOGLE_APPLICATION_CREDENTIALS=/adc.json"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gemini mcp list: %v\n%s", err, out)
	}
	read := func(p string) map[string]*string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("the server did not run: %v", err)
		}
		var m map[string]*string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got := read(plain)
	for name, v := range got {
		if redacted := v == nil; redacted != Redacted(name) {
			t.Errorf("%s: Gemini CLI redacted it: %v; Redacted says %v", name, redacted, Redacted(name))
		}
	}
	if v := read(named)["TFE_TOKEN"]; v == nil || *v != "tok-1234" {
		t.Errorf("named in the entry's env, TFE_TOKEN reached the server as %v", v)
	}
}
