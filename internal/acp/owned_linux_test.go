package acp

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestMCPServerGroupEnds: a stdio MCP server that leaves a process of its
// own behind and fails at initialize fails the session, and what it
// started ends with it (its process group, proc.Own), instead of running
// on after gemkit let go of the server.
func TestMCPServerGroupEnds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := "sleep 60 & echo $! > " + pidFile + "; exit 3"
	srv := sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: "leaver", Command: "/bin/sh", Args: []string{"-c", script}, Env: []sdk.EnvVariable{}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := connectMCP(ctx, []sdk.McpServer{srv}, dir, io.Discard, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a server that exits at once connected")
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Waited for on its pidfd: it is not this process's child.
	if left := gemkittest.WaitExit([]int{pid}, 30*time.Second); len(left) > 0 {
		t.Fatalf("the server's background process %d still runs", pid)
	}
}
