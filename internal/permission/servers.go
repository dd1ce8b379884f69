package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// ServersDir is where `gemkit mcp --http` records the loopback port it
// serves on (one file per server, named <port>.<pid>), inside gemkit's
// state folder (~/.gemini/gemkit), which is closed to every tool.
func ServersDir(home string) string { return filepath.Join(home, ".gemini", "gemkit", "servers") }

// RecordServer records that this process serves on port, for the sandbox
// proxy to refuse it to tools (OwnServerPort). The returned func removes
// the record.
func RecordServer(home string, port int) (remove func(), err error) {
	dir := ServersDir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recording the server's port: %w", err)
	}
	p := filepath.Join(dir, strconv.Itoa(port)+"."+strconv.Itoa(os.Getpid()))
	if err := fsutil.WriteFileAtomic(p, nil, 0o600); err != nil {
		return nil, fmt.Errorf("recording the server's port: %w", err)
	}
	return func() { _ = os.Remove(p) }, nil
}

// OwnServerPort reports whether a loopback port belongs to one of the
// servers gemkit runs for the programs it serves, as their own records
// name them at the moment of asking: the IDE companion (its discovery
// files in $TMPDIR/gemini/ide, gemini-ide-server-<pid>-<port>.json or a
// legacy file holding "port"), its Claude Code endpoint (<port>.lock in
// Claude Code's ide folder) and `gemkit mcp --http` (ServersDir). Each
// holds or is guarded by a token that lets a client write files or run
// tools, so a tool allowed "localhost" must still not reach them.
func OwnServerPort(in ClosedInputs, port int) bool {
	want := strconv.Itoa(port)
	var dirs []string
	for _, t := range in.TempDirs {
		if t != "" {
			dirs = append(dirs, filepath.Join(t, "gemini", "ide"))
		}
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasPrefix(name, "gemini-ide-server-") || !strings.HasSuffix(name, ".json") {
				continue
			}
			parts := strings.Split(strings.TrimSuffix(name, ".json"), "-")
			if len(parts) == 5 && parts[4] == want {
				return true
			}
			if len(parts) == 4 && legacyPort(filepath.Join(d, name)) == port {
				return true
			}
		}
	}
	var claude []string
	if in.ClaudeConfigDir != "" {
		claude = append(claude, filepath.Join(in.ClaudeConfigDir, "ide"))
	}
	if in.Home != "" {
		claude = append(claude, filepath.Join(in.Home, ".claude", "ide"))
	}
	for _, d := range claude {
		if _, err := os.Lstat(filepath.Join(d, want+".lock")); err == nil {
			return true
		}
	}
	for _, h := range []string{in.Home, in.GeminiHome} {
		if h == "" {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(ServersDir(h), want+".*"))
		if len(matches) > 0 {
			return true
		}
	}
	return false
}

// legacyPort reads the port of a discovery file named without one.
func legacyPort(p string) int {
	b, err := os.ReadFile(p)
	if err != nil || len(b) > 1<<20 {
		return 0
	}
	var f struct {
		Port json.Number `json:"port"`
	}
	if json.Unmarshal(b, &f) != nil {
		return 0
	}
	n, _ := strconv.Atoi(f.Port.String())
	return n
}
