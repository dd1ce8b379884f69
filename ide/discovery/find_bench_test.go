package discovery

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// benchDir fills a discovery directory with n files, half of live pids
// (this process) and half of pids that cannot run, each with a workspace
// folder of its own; the last one holds cwd.
func benchDir(b *testing.B, n int) (dir, cwd string) {
	b.Helper()
	root := b.TempDir()
	dir = filepath.Join(root, "gemini", "ide")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		pid := os.Getpid()
		if i%2 == 1 {
			pid = 90000000 + i
		}
		folder := filepath.Join(root, "p"+strconv.Itoa(i))
		if err := os.MkdirAll(folder, 0o755); err != nil {
			b.Fatal(err)
		}
		data, _ := json.Marshal(map[string]any{"port": 20000 + i, "workspacePath": folder, "authToken": "t",
			"ideInfo": map[string]string{"name": "x", "displayName": "X"}})
		if err := os.WriteFile(filepath.Join(dir, FileName(pid, 20000+i)), data, 0o600); err != nil {
			b.Fatal(err)
		}
		cwd = folder
	}
	return dir, cwd
}

// BenchmarkChoose200 is the real CLI's choice among 200 discovery files
// (getConnectionConfigFromFile in gemini-cli 0.61.0
// packages/core/src/ide/ide-connection-utils.ts), the IDE pid known.
func BenchmarkChoose200(b *testing.B) {
	dir, cwd := benchDir(b, 200)
	noEnv := func(string) string { return "" }
	b.ResetTimer()
	for b.Loop() {
		ch, err := Choose(ChooseOptions{Dir: dir, IDEPID: 1, Cwd: cwd, Getenv: noEnv})
		if err != nil || ch.Chosen == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindAndChoose200 adds the process-tree walk through /proc.
func BenchmarkFindAndChoose200(b *testing.B) {
	dir, cwd := benchDir(b, 200)
	noEnv := func(string) string { return "" }
	b.ResetTimer()
	for b.Loop() {
		p := FindIDEProcess(context.Background(), FindOptions{Getenv: noEnv})
		if _, err := Choose(ChooseOptions{Dir: dir, IDEPID: p.PID, Cwd: cwd, Getenv: noEnv}); err != nil {
			b.Fatal(err)
		}
	}
}
