package term

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"

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

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"abc-1.2/x", "abc-1.2/x"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	}
	for _, tc := range tests {
		if got := shellQuote(tc.in); got != tc.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// servingRecorder is a recorder that also says where it serves, as the
// companion's Server does.
type servingRecorder struct {
	recorder
	ready chan struct{}
}

func (s *servingRecorder) Ready() <-chan struct{} { return s.ready }
func (s *servingRecorder) Port() int              { return 5555 }
func (s *servingRecorder) DiscoveryPath() string  { return "/tmp/gemini/ide/x.json" }
func (s *servingRecorder) Env() map[string]string { return map[string]string{"A": "b"} }

// The announcement waits for the server's Ready, and follows it. Under
// synctest, Wait returns once every goroutine of the test is blocked, so
// "not yet" is a fact rather than a guess after a sleep.
func TestRunAnnouncesWhenReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &servingRecorder{ready: make(chan struct{})}
		pr, pw := io.Pipe()
		defer pw.Close()
		out := &gemkittest.Output{}
		f := New(Options{In: pr, Out: out, Editor: "false"})
		done := make(chan error, 1)
		go func() { done <- f.Run(context.Background(), ev) }()
		synctest.Wait()
		if strings.Contains(out.String(), "export") {
			t.Fatal("announced before the discovery file was written")
		}
		close(ev.ready)
		synctest.Wait()
		if !strings.Contains(out.String(), "export A=b") {
			t.Fatalf("no announcement:\n%s", out.String())
		}
		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
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
