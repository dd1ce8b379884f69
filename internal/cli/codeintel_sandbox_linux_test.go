package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/codeintel/codeinteltest"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// Gemini CLI runs `gemkit codeintel hook` after every write_file, with
// no question asked: a tool that planted TypeScript's server in the
// workspace (node_modules/typescript/lib/tsserver.js, which
// typescript-language-server prefers to its own) gets it run by the
// broker's typescript-language-server, but only inside the server's
// sandbox: the marker outside the workspace stays absent, the secret
// beside it unread, and what the planted program saw lands in the
// server's private cache.
func TestHookRunsPlantedTsserverBoxed(t *testing.T) {
	t.Parallel()
	bin := gemkittest.Gemkit(t)
	nodeBin := codeinteltest.NodeBin(t, "typescript-language-server")
	ws := codeinteltest.Fixture(t, "ts")
	host, cache := t.TempDir(), t.TempDir()
	outside, secret := filepath.Join(host, "pwned"), filepath.Join(host, "secret")
	os.WriteFile(secret, []byte("the-secret"), 0o600)
	pkg := filepath.Join(ws, "node_modules", "typescript")
	os.MkdirAll(filepath.Join(pkg, "lib"), 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"typescript","version":"5.9.3"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "lib", "tsserver.js"), []byte(`const fs = require("fs");
const out = [];
try { fs.writeFileSync(`+strconv.Quote(outside)+`, "pwned"); out.push("wrote outside"); } catch (e) { out.push("write outside: " + e.code); }
try { out.push("read secret: " + fs.readFileSync(`+strconv.Quote(secret)+`, "utf8")); } catch (e) { out.push("read secret: " + e.code); }
fs.writeFileSync(process.env.HOME + "/planted-ran", out.join("\n"));
`), 0o644)
	t.Cleanup(func() {
		for _, pid := range codeinteltest.Brokers(ws) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	file := filepath.Join(ws, "src", "main.ts")
	text, _ := os.ReadFile(file)
	in, _ := json.Marshal(map[string]any{"hook_event_name": "AfterTool", "cwd": ws, "tool_name": "write_file",
		"tool_input":    map[string]any{"file_path": file, "content": string(text)},
		"tool_response": map[string]any{"returnDisplay": map[string]any{"filePath": file, "originalContent": string(text) + "\n", "isNewFile": false}}})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "codeintel", "hook")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_CACHE_HOME="+cache,
		"PATH="+codeinteltest.PathWith(nodeBin))
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	t.Logf("hook: %v\n%s", err, out)

	ran := filepath.Join(cache, "gemkit", "langserver", "typescript-language-server", "home", "planted-ran")
	var saw []byte
	// The planted program runs when the language server gets to it, which
	// it tells no one; the checks below say what it did or did not do.
	gemkittest.Poll(90*time.Second, 200*time.Millisecond, func() bool {
		if _, err := os.Stat(outside); err == nil {
			return true
		}
		if b, err := os.ReadFile(ran); err == nil && len(b) > 0 {
			saw = b
			return true
		}
		return false
	})
	t.Logf("the planted tsserver saw:\n%s", saw)
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the planted tsserver wrote %s outside the workspace (stat: %v)", outside, err)
	}
	if saw == nil {
		t.Fatalf("the planted tsserver never ran (no %s)", ran)
	}
	if strings.Contains(string(saw), "the-secret") || strings.Contains(string(saw), "wrote outside") {
		t.Fatalf("the planted tsserver reached outside its box:\n%s", saw)
	}
}
