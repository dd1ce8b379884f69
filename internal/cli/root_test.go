package cli

import (
	"bytes"
	"context"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
)

// A run changes no process global: not the default logger, not the
// collector's target (list tunes it only when Main owns the process);
// --verbose lowers the level of the run's own logger, which writes to the
// run's stderr.
func TestRunLeavesProcessGlobalsAlone(t *testing.T) {
	// Not parallel: it reads two process globals.
	defaultLogger := slog.Default()
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)

	var out, errb bytes.Buffer
	a := newApp(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	var tuned []int
	a.setGCPercent = func(p int) int { tuned = append(tuned, p); return gc }
	home := t.TempDir()
	if code := run(context.Background(), []string{"extensions", "--home", home, "--workspace", home, "list", "--verbose"}, a); code != ExitOK {
		t.Fatalf("list: exit %d\n%s", code, errb.String())
	}
	if slog.Default() != defaultLogger {
		t.Error("the run replaced slog's default logger")
	}
	if now := debug.SetGCPercent(gc); now != gc {
		t.Errorf("GC percent %d after the run, want %d", now, gc)
	}
	if len(tuned) != 2 || tuned[0] != 400 || tuned[1] != gc {
		t.Errorf("list tuned the collector through the app as %v, want [400 %d]", tuned, gc)
	}
	if a.level.Level() != slog.LevelDebug {
		t.Errorf("--verbose left the run's log level at %v", a.level.Level())
	}
	a.log.Debug("probe")
	if !strings.Contains(errb.String(), "msg=probe") {
		t.Errorf("the run's logger does not write debug lines to the run's stderr: %q", errb.String())
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--version"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); got != "gemkit version "+buildVersion()+"\n" {
		t.Errorf("--version printed %q", got)
	}
}
