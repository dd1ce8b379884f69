package term

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/internal/gemkittest"
)

func TestServingText(t *testing.T) {
	got := ServingText(map[string]string{
		"GEMINI_CLI_IDE_SERVER_PORT":    "4321",
		"GEMINI_CLI_IDE_WORKSPACE_PATH": "/home/me/my project:/srv/it's",
	})
	for _, want := range []string{
		"  export GEMINI_CLI_IDE_SERVER_PORT=4321 GEMINI_CLI_IDE_WORKSPACE_PATH='/home/me/my project:/srv/it'\\''s'\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ServingText lacks %q:\n%s", want, got)
		}
	}
}

func TestServingTextWithoutEnv(t *testing.T) {
	got := ServingText(nil)
	if strings.Contains(got, "export") || !strings.Contains(got, "Proposed changes will show here.") {
		t.Fatalf("ServingText(nil):\n%s", got)
	}
}

// TestServeAnnouncesWhenReady: Serve says how to reach the companion
// (the export line of its real environment) only once its discovery file
// exists; when the input ends without a terminal it stops the companion,
// which removes the file, and says why.
func TestServeAnnouncesWhenReady(t *testing.T) {
	dir := t.TempDir()
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &gemkittest.Output{}
	f := New(Options{In: pr, Out: out, Editor: "false"})
	done := make(chan error, 1)
	go func() {
		done <- f.Serve(context.Background(), companion.Config{
			Workspace: []string{t.TempDir()}, PID: os.Getpid(), DiscoveryDir: dir,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}()
	out.WaitFor(t, "the announcement", func(o string) bool { return strings.Contains(o, "export ") })
	files, _ := filepath.Glob(filepath.Join(dir, "gemini-ide-server-*.json"))
	if len(files) != 1 {
		t.Fatalf("announced with discovery files %v:\n%s", files, out.String())
	}
	if !strings.Contains(out.String(), " GEMINI_CLI_IDE_SERVER_PORT=") {
		t.Fatalf("the announcement lacks the companion's port:\n%s", out.String())
	}
	pw.Close()
	if err := <-done; !errors.Is(err, ErrInputEnded) {
		t.Fatalf("Serve returned %v, want ErrInputEnded", err)
	}
	if _, err := os.Stat(files[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the discovery file is still there once Serve returned")
	}
}

// TestServingTextInContainer: in a container the export line is optional
// too (a CLI without REMOTE_CONTAINERS reaches the companion through the
// discovery file's stdio bridge), and nothing says it is required.
func TestServingTextInContainer(t *testing.T) {
	for _, env := range []map[string]string{
		{"GEMINI_CLI_IDE_SERVER_PORT": "4321", "REMOTE_CONTAINERS": "true"},
		{"GEMINI_CLI_IDE_SERVER_PORT": "4321"},
	} {
		got := ServingText(env)
		if strings.Contains(got, "Required") || !strings.Contains(got, "optional") || !strings.Contains(got, "export GEMINI_CLI_IDE_SERVER_PORT=4321") {
			t.Errorf("ServingText(%v):\n%s", env, got)
		}
	}
}
