package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestServeInTmuxWatchesSaves runs the real `gemkit ide serve` in a real
// terminal with no editor attached: the files saved in the workspace
// reach a real client (the project's Go client, client, which
// normalises the context as the Gemini CLI does) as its open files, newest
// first and active, what .gitignore lists left out; and the terminal's
// status line shows the connected CLIs and the diffs waiting, in order.
func TestServeInTmuxWatchesSaves(t *testing.T) {
	t.Parallel()
	gemkittest.Tool(t, "tmux", "tmux")
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.WriteFile(filepath.Join(ws, ".gitignore"), []byte("*.log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, discoveryPath, mcpClient, mcpOutcomes := tmuxServe(t, ws, "false")
	s.waitPane("the watcher's line", func(p string) bool {
		return strings.Contains(p, "open files:     the files you save (watching 1 folder;")
	})
	// Each client is named with its transport, then its process and
	// folder (the test process, in this package's folder).
	wd, _ := os.Getwd()
	who := fmt.Sprintf("(HTTP, pid %d, in %s)", os.Getpid(), wd)
	s.waitPane("the first CLI", func(p string) bool {
		return strings.Contains(p, "Status: 1 CLI connected: tmux-test 1 "+who+"; no diff waiting.")
	})

	// The Go client finds the companion as the CLI would from inside the
	// workspace, given the editor's pid (the shell tmux runs).
	m := regexp.MustCompile(`gemini-ide-server-(\d+)-\d+\.json$`).FindStringSubmatch(discoveryPath)
	if m == nil {
		t.Fatalf("discovery file name %s", discoveryPath)
	}
	pid, _ := strconv.Atoi(m[1])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, _, err := client.Connect(ctx, client.Options{
		Cwd:           ws,
		Dir:           filepath.Dir(discoveryPath),
		IDEPID:        pid,
		Getenv:        func(string) string { return "" },
		InContainer:   func() bool { return false },
		ClientName:    "watch-test",
		ClientVersion: "2",
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cl.Close(context.Background())
	s.waitPane("both CLIs", func(p string) bool {
		return strings.Contains(p, "Status: 2 CLIs connected: tmux-test 1 "+who+", watch-test 2 "+who+"; no diff waiting.")
	})

	// Saves, one after the other, as a person in another terminal would.
	save := func(name, content string) string { t.Helper(); return saveIn(t, ws, name, content) }
	a := save("a.txt", "a\n")
	waitOpenFiles(t, cl, a)
	b := save(filepath.Join("src", "b.go"), "package b\n") // a folder made after the start
	save("debug.log", "ignored\n")
	files := waitOpenFiles(t, cl, b, a)
	if !files[0].IsActive || files[1].IsActive || files[0].Timestamp <= files[1].Timestamp {
		t.Errorf("want the newest save active and first: %+v", files)
	}
	a = save("a.txt", "a, again\n")
	waitOpenFiles(t, cl, a, b)

	// Two diffs, one from each CLI: the status line lists them in order.
	c := filepath.Join(ws, "c.txt")
	d, err := cl.StartDiff(ctx, b, "package b // changed\n")
	if err != nil {
		t.Fatal(err)
	}
	openDiffTool(ctx, t, mcpClient, c, "new\n")
	s.waitPane("the queue", func(p string) bool {
		return strings.Contains(p, "2 diffs waiting: 1. "+b+", 2. "+c+".")
	})
	s.keys("r")
	if o, err := d.Wait(ctx); err != nil || o.Accepted {
		t.Fatalf("first diff: %+v, %v; want rejected", o, err)
	}
	s.waitPane("the shorter queue", func(p string) bool { return strings.Contains(p, "1 diff waiting: 1. "+c+".") })
	s.keys("r")
	// Outcomes go to every session: the first diff's comes first.
	if got := waitOutcome(t, mcpOutcomes); got.filePath != b {
		t.Fatalf("outcome %+v, want the first diff's", got)
	}
	if got := waitOutcome(t, mcpOutcomes); got.method != ide.MethodDiffRejected || got.filePath != c {
		t.Fatalf("second diff: %+v; want rejected", got)
	}

	// A CLI that leaves is gone from the status line.
	cl.Close(context.Background())
	s.waitPane("the CLI leaving", func(p string) bool {
		return strings.Contains(p, "Status: 1 CLI connected: tmux-test 1 "+who+"; no diff waiting.") &&
			strings.LastIndex(p, "Status: 1 CLI connected") > strings.LastIndex(p, "watch-test 2")
	})
	s.keys("C-d")
	s.waitPane("exit", func(p string) bool { return strings.Contains(p, "EXITED 0") })
}

// saveIn writes content to the file name of the folder ws, making its
// folders, as a person's save would, and returns its path.
func saveIn(t *testing.T, ws, name, content string) string {
	t.Helper()
	p := filepath.Join(ws, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitOpenFiles waits until the client's context lists want (newest
// first) as its open files, and returns them.
func waitOpenFiles(t *testing.T, cl *client.Client, want ...string) []ide.File {
	t.Helper()
	// The real gemkit process's watcher reports on its own time.
	var got []string
	var files []ide.File
	if !gemkittest.Poll(20*time.Second, 20*time.Millisecond, func() bool {
		got, files = nil, nil
		if c := cl.Context(); c != nil && c.WorkspaceState != nil {
			files = c.WorkspaceState.OpenFiles
			for _, f := range files {
				got = append(got, f.Path)
			}
		}
		return slices.Equal(got, want)
	}) {
		t.Fatalf("the client's open files are %q, want %q", got, want)
	}
	return files
}
