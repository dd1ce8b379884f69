package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestBridgeExitCodes: gemkit ide bridge exits as its help and
// docs/ide-client.md say, 0 when the CLI closes its end and 1 when the
// companion is gone or FILE cannot be used, having answered the CLI's
// request with the reason. A discovery file left by a killed editor and
// companion (a tour in a container, where the CLI starts the bridge) is
// the second case.
func TestBridgeExitCodes(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "gemini-ide-server-1-1.json")
	b, _ := json.Marshal(map[string]any{"port": gemkittest.ClosedPort(t), "authToken": "x"})
	if err := os.WriteFile(stale, b, 0o600); err != nil {
		t.Fatal(err)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	for _, tc := range []struct {
		name, file, in string
		code           int
		answer         string // in the JSON-RPC error on stdout
	}{
		{"stdin ends at once", stale, "", ExitOK, ""},
		{"companion gone", stale, initialize, ExitNo, "cannot be reached"},
		{"no such file", filepath.Join(dir, "missing.json"), initialize, ExitNo, "missing.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The CLI keeps its end open while it waits for the answer:
			// stdin ends only after the bridge has, unless it is empty.
			var in io.Reader = strings.NewReader("")
			if tc.in != "" {
				r, w := io.Pipe()
				defer w.Close()
				go w.Write([]byte(tc.in))
				in = r
			}
			var out, errOut bytes.Buffer
			code := Run(context.Background(), []string{"ide", "bridge", tc.file}, Streams{In: in, Out: &out, Err: &errOut})
			if code != tc.code {
				t.Errorf("exit %d, want %d (stdout %q, stderr %q)", code, tc.code, out.String(), errOut.String())
			}
			if tc.answer != "" && (!strings.Contains(out.String(), `"error"`) || !strings.Contains(out.String(), tc.answer)) {
				t.Errorf("stdout %q, want a JSON-RPC error that says %q", out.String(), tc.answer)
			}
			if errOut.Len() != 0 {
				t.Errorf("stderr %q, want nothing (the CLI shows it in its terminal)", errOut.String())
			}
		})
	}
}
