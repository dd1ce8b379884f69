package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// TestUnknownSubcommand: a typo in a command group's subcommand fails
// with the nearest names instead of printing the group's help and
// exiting 0; the group alone still prints its help.
func TestUnknownSubcommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"extensions", "instal", "./x"}, ExitError, `unknown command "instal" for "gemkit extensions"; did you mean install?`},
		{[]string{"ide", "serv"}, ExitError, `unknown command "serv" for "gemkit ide"; did you mean serve?`},
		{[]string{"ide", "frobnicate"}, ExitError, `unknown command "frobnicate" for "gemkit ide" (gemkit ide --help lists them)`},
		{[]string{"extensio"}, ExitError, `unknown command "extensio" for "gemkit"`},
		{[]string{"ide"}, ExitOK, ""},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := Run(context.Background(), tc.args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != tc.wantCode || !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("gemkit %s: exit %d, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, errb.String(), tc.wantCode, tc.wantErr)
		}
	}
}

// TestHomeMeansOneThing: --home is the folder that holds .gemini for
// every command; a .gemini folder passed as --home is refused with the
// folder to pass instead, not taken as a home without extensions.
func TestHomeMeansOneThing(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dotGemini := home + "/.gemini"
	if err := os.MkdirAll(dotGemini+"/extensions", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"extensions", "--home", dotGemini, "list"},
		{"run", "--home", dotGemini, "hello"},
		{"mcp", "--home", dotGemini},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code == ExitOK || !strings.Contains(errb.String(), "use --home "+home) {
			t.Errorf("gemkit %s: exit %d, stderr %q; want a refusal naming --home %s", strings.Join(args, " "), code, errb.String(), home)
		}
	}
	c := NewRoot(Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard})
	for _, path := range [][]string{{"extensions", "list"}, {"run"}, {"chat"}, {"mcp"}} {
		cmd, _, err := c.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if f := cmd.Flag("home"); f == nil || f.Usage != homeFlagUsage {
			t.Errorf("gemkit %s --home: %v, want the one usage text", strings.Join(path, " "), f)
		}
	}
}

// TestMCPCommandAlone: `gemkit mcp` builds only its own command under the
// root (newRoot), and says the same as in the whole tree: its help, its
// flags' errors, an argument it does not take, the root's flags.
func TestMCPCommandAlone(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"mcp", "--help"},
		{"mcp", "-h", "-v"},
		{"mcp", "--no-such-flag"},
		{"mcp", "--timeout", "soon"},
		{"mcp", "serve"},
		{"mcp", "help"},
	} {
		say := func(alone bool) string {
			var out, errb bytes.Buffer
			a := newApp(Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
			var root *cobra.Command
			if alone {
				root = newRoot(a, args...)
			} else {
				root = newRoot(a)
			}
			root.SetArgs(args)
			err := root.ExecuteContext(context.Background())
			return fmt.Sprintf("out %q\nerr %q\nerror %v", out.String(), errb.String(), err)
		}
		if alone, whole := say(true), say(false); alone != whole {
			t.Errorf("%q alone:\n%s\nin the whole tree:\n%s", args, alone, whole)
		}
	}
	var out bytes.Buffer
	root := newRoot(newApp(Streams{In: strings.NewReader(""), Out: &out, Err: &out}), "mcp")
	if n := len(root.Commands()); n != 1 {
		t.Errorf("the root of `gemkit mcp` has %d commands, want mcp's alone", n)
	}
}
