package extmcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extmcp"
)

// keytarServer is a server of the shape of Auth0's: it logs as it
// starts, then fails to load keytar, whose native addon was never built,
// and says so in words of its own, with the error of the require as the
// cause (Node prints both stacks, 2 KB and more).
const keytarServer = `import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
for (let i = 0; i < 20; i++) console.error('[info] loading configuration step ' + i);
function loadKeytar() {
  try {
    return require('keytar');
  } catch (e) {
    throw new Error('Failed to load keytar native addon', { cause: e });
  }
}
loadKeytar();
`

// TestStartFailureSaysWhy: the words of a server that cannot start lead
// with the line of its stderr that says why ("Failed to load keytar
// native addon"), which its stack's 2 KB pushed out of the end kept,
// and quote that end without the stack's frames and Node's footer.
// They were "... the end of what it printed on stderr:" and eight lines
// of "at Module.load (node:internal/...)" down to "Node.js v20.20.2".
func TestStartFailureSaysWhy(t *testing.T) {
	t.Parallel()
	s := newSetup(t, 30*time.Second)
	dir := filepath.Join(s.ws, "auth0")
	for name, body := range map[string]string{
		"server.mjs":                        keytarServer,
		"node_modules/keytar/package.json":  `{"name": "keytar", "version": "7.9.0", "main": "lib/keytar.js"}`,
		"node_modules/keytar/lib/keytar.js": "module.exports = require('../build/Release/keytar.node');\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp := extmcp.Spec{Extension: "auth0", Server: "auth0", Dir: s.ext, Command: "node", Args: []string{filepath.Join(dir, "server.mjs")}}
	s.m.Sync([]extmcp.Spec{sp})
	_, failed := s.m.Catalog(context.Background())
	if len(failed) != 1 {
		t.Fatalf("%d failures, want the server's", len(failed))
	}
	words := failed[0].Err.Error()
	t.Log(words)
	if !strings.Contains(words, "extension auth0's MCP server auth0 exited at once (exit status 1); it said: Error: Failed to load keytar native addon; the end of what it printed on stderr:\n") {
		t.Errorf("the words do not lead with the cause:\n%s", words)
	}
	for _, frame := range []string{"at Module.load", "Node.js v"} {
		if strings.Contains(words, frame) {
			t.Errorf("the words quote %q:\n%s", frame, words)
		}
	}
}
