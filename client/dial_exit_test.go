package client

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// refusingCompanion is a shell companion that answers initialize with a
// JSON-RPC error, says why on stderr too, and exits 1: what the stdio
// bridge does when it cannot use its discovery file, with a line on
// stderr besides (the bridge writes none). prefix runs first.
func refusingCompanion(prefix string) Endpoint {
	script := prefix + `read l; id=$(echo "$l" | sed 's/.*"id":\([0-9]*\).*/\1/'); ` +
		`echo '{"jsonrpc":"2.0","id":'"$id"',"error":{"code":-32000,"message":"cannot use the file: no such file"}}'; ` +
		`echo 'refused on stderr' >&2; exit 1`
	return Endpoint{Transport: TransportStdio, Command: "sh", Args: []string{"-c", script}}
}

// dialFailure dials ep, which must fail, and returns the DialError; the
// dial has its own bounds, 30 s is only the test's.
func dialFailure(t *testing.T, ep Endpoint) *DialError {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		c, err := Dial(context.Background(), ep, Options{})
		if err == nil {
			c.Close(context.Background())
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the dial did not end")
	}
	var de *DialError
	if !errors.As(err, &de) {
		t.Fatalf("Dial: %v, want a DialError", err)
	}
	return de
}

// TestStdioCompanionRefusesAndExits: a companion that answers initialize
// with an error and exits is reported with its exit status, its answer
// and its stderr, every time: the exit used to end the initialize before
// the answer waiting in its stdout was read, and its answer was dropped
// for the exit status (gemkit ide status printed "companion exited: exit
// status 1 (stderr: )" for a bridge that had said why).
func TestStdioCompanionRefusesAndExits(t *testing.T) {
	for name, prefix := range map[string]string{
		"alone": "",
		// A child of the companion keeps its stdout and stderr open:
		// its exit still bounds the reads, and what it wrote before is
		// read. The dial's close ends the child (its process group).
		"child holds the pipes": "sleep 1000 & ",
	} {
		t.Run(name, func(t *testing.T) {
			de := dialFailure(t, refusingCompanion(prefix))
			msg := de.Error()
			for _, want := range []string{"companion exited: exit status 1", "cannot use the file: no such file", "(stderr: refused on stderr)"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			var ee *exec.ExitError
			if de.Kind != "spawn" || !errors.As(de, &ee) || ee.ExitCode() != 1 {
				t.Errorf("kind %q, exit %v", de.Kind, ee)
			}
		})
	}
}

// TestStdioBridgeFailureSaysWhy: gemkit ide bridge, started as a stdio
// companion with a discovery file that is gone, fails the dial with its
// own words (it says them as its answer to initialize, never on stderr).
func TestStdioBridgeFailureSaysWhy(t *testing.T) {
	gone := filepath.Join(t.TempDir(), "gone.json")
	de := dialFailure(t, Endpoint{Transport: TransportStdio, Command: gemkittest.Gemkit(t), Args: []string{"ide", "bridge", gone}})
	msg := de.Error()
	for _, want := range []string{"companion exited: exit status 1", "gemkit ide bridge: ", gone, "no such file or directory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "(stderr:") {
		t.Errorf("%q names an empty stderr", msg)
	}
}

// TestDoctorSaysWhyTheCompanionRefused: doctor's connection finding
// carries each endpoint's own failure, a bridge's answer among them,
// besides the CLI's words, which name no cause.
func TestDoctorSaysWhyTheCompanionRefused(t *testing.T) {
	ws := t.TempDir()
	ep := refusingCompanion("")
	args, _ := json.Marshal(ep.Args)
	env := map[string]string{
		"GEMINI_CLI_IDE_SERVER_STDIO_COMMAND": ep.Command,
		"GEMINI_CLI_IDE_SERVER_STDIO_ARGS":    string(args),
		"GEMINI_CLI_IDE_WORKSPACE_PATH":       ws,
		"TERM_PROGRAM":                        "vscode",
	}
	d := doctorWithEnv(t, ws, env)
	found := slices.ContainsFunc(d.Findings, func(f Finding) bool {
		return f.Subject == "connection" && f.Severity == "error" && strings.Contains(f.Message, "cannot use the file: no such file")
	})
	if !found || d.Works {
		t.Errorf("doctor: works=%v %+v", d.Works, d.Findings)
	}
}

// TestDoctorEnvCompanionWithoutWorkspace: a companion named by the
// environment alone, with no workspace path anywhere, is refused by the
// CLI before it starts; doctor names the missing variable and its fix.
func TestDoctorEnvCompanionWithoutWorkspace(t *testing.T) {
	ws := t.TempDir()
	env := map[string]string{
		"GEMINI_CLI_IDE_SERVER_STDIO_COMMAND": "sh",
		"TERM_PROGRAM":                        "vscode",
	}
	d := doctorWithEnv(t, ws, env)
	found := slices.ContainsFunc(d.Findings, func(f Finding) bool {
		return f.Subject == "GEMINI_CLI_IDE_WORKSPACE_PATH" && f.Severity == "error" && strings.Contains(f.Fix, "export GEMINI_CLI_IDE_WORKSPACE_PATH=")
	})
	if !found || d.Works {
		t.Errorf("doctor: works=%v %+v", d.Works, d.Findings)
	}
}

// TestDoctorStdioArgsWithoutCommand: the CLI reads
// GEMINI_CLI_IDE_SERVER_STDIO_ARGS only beside
// GEMINI_CLI_IDE_SERVER_STDIO_COMMAND. Alone, unparsable or not, it
// changes nothing, so doctor must not call it an error that makes the
// CLI start a command "without arguments"; beside the command it is one.
func TestDoctorStdioArgsWithoutCommand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		command  string
		severity Severity
		message  string
	}{
		{"alone", "", SeverityWarning, "ignores it"},
		{"beside the command", "true", SeverityError, "without arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			env := map[string]string{
				"GEMINI_CLI_IDE_SERVER_STDIO_ARGS":    "notjson",
				"GEMINI_CLI_IDE_SERVER_STDIO_COMMAND": tc.command,
				"GEMINI_CLI_IDE_WORKSPACE_PATH":       ws,
				"TERM_PROGRAM":                        "vscode",
			}
			d := doctorWithEnv(t, ws, env)
			var got []Finding
			for _, f := range d.Findings {
				if f.Subject == "GEMINI_CLI_IDE_SERVER_STDIO_ARGS" {
					got = append(got, f)
				}
			}
			if len(got) != 1 || got[0].Severity != tc.severity || !strings.Contains(got[0].Message, tc.message) {
				t.Errorf("findings on the variable: %+v", got)
			}
		})
	}
}

// TestDoctorStaleExportLine: GEMINI_CLI_IDE_PID and
// GEMINI_CLI_IDE_SERVER_PORT of a companion that has gone are, outside an
// editor's terminal, an export line pasted from an earlier `gemkit ide
// serve`; doctor's fix must name that line, not only an editor's terminal.
func TestDoctorStaleExportLine(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	env := map[string]string{
		"GEMINI_CLI_IDE_PID":         strconv.Itoa(exited.Process.Pid),
		"GEMINI_CLI_IDE_SERVER_PORT": strconv.Itoa(gemkittest.ClosedPort(t)),
		"TERM_PROGRAM":               "vscode",
	}
	d, err := Doctor(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "ide"), Cwd: ws, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"GEMINI_CLI_IDE_PID", "GEMINI_CLI_IDE_SERVER_PORT"} {
		found := slices.ContainsFunc(d.Findings, func(f Finding) bool { return f.Subject == v && strings.Contains(f.Fix, "export line") })
		if !found {
			t.Errorf("no fix naming the export line for %s: %+v", v, d.Findings)
		}
	}
}

// doctorWithEnv is doctor's report from ws with no discovery file, the
// process's environment being env alone.
func doctorWithEnv(t *testing.T, ws string, env map[string]string) *DoctorReport {
	t.Helper()
	d, err := Doctor(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "ide"), Cwd: ws, IDEPID: os.Getpid(), Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
