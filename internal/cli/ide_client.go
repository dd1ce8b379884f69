// The client commands (ide status, doctor, watch, diff and check: one file
// each, ide_<command>.go) share the flags and helpers in this file.

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gemkit/gemkit/client"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/ide/discovery"
)

// clientFlags are the flags every client command shares: where to look and
// how to reach the companion, overriding what the real CLI would decide on
// its own (client.Options, which follows IdeClient in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts).
type clientFlags struct {
	dir    string
	idePID int
	host   string
	json   bool
	// as is the CLI whose rules to follow: "gemini" (or "") or "qwen".
	as string
}

func (f *clientFlags) register(cmd *cobra.Command, withJSON bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "discovery-dir", "", "directory of the discovery files (default: $TMPDIR/gemini/ide; with --as qwen, Qwen Code's lock folder: $QWEN_HOME/ide, else ~/.qwen/ide)")
	fl.IntVar(&f.idePID, "ide-pid", 0, "pid of the editor (default: "+ide.EnvPID+", else the process-tree walk)")
	fl.StringVar(&f.host, "host", "", "host to dial (default: 127.0.0.1, or host.docker.internal in a container, as the real CLI)")
	fl.StringVar(&f.as, "as", "gemini", "find the companion as this CLI does: gemini (Gemini CLI) or qwen (Qwen Code: its lock files and variables)")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		_, err := f.agent()
		return err
	}
	if withJSON {
		fl.BoolVar(&f.json, "json", false, "print JSON for scripts")
	}
}

// agent is the client.Options.Agent of --as, or an error a person can act
// on.
func (f clientFlags) agent() (string, error) {
	switch f.as {
	case "", "gemini":
		return client.AgentGemini, nil
	case "qwen":
		return client.AgentQwen, nil
	}
	return "", fmt.Errorf("--as must be gemini or qwen, not %q", f.as)
}

// clientOptions are the client's options for the flags f, in the app's
// environment and working directory.
func (a *app) clientOptions(f clientFlags) client.Options {
	agent, _ := f.agent()
	o := client.Options{Dir: f.dir, IDEPID: f.idePID, Host: f.host, Logger: a.log, ClientName: "gemkit", Cwd: a.cwd, Agent: agent}
	if a.lookupEnv != nil {
		o.LookupEnv = a.lookupEnv
		o.Getenv = a.getenv
		if o.Dir == "" && agent == client.AgentGemini {
			o.Dir = a.discoveryDir()
		}
	}
	return o
}

func addIDEClientCommands(parent *cobra.Command, a *app) {
	parent.AddCommand(newIDEStatusCmd(a), newIDEDoctorCmd(a), newIDEWatchCmd(a), newIDEDiffCmd(a), newIDECheckCmd(a), newIDEBridgeCmd(a))
}

// ideReport prints a command's report as JSON (--json) or as text, and
// exits 1 when the report's verdict ok is false, so that status, doctor and
// check answer scripts the same way.
func ideReport[R any](w io.Writer, asJSON bool, r R, printText func(io.Writer, R), ok bool) error {
	if asJSON {
		if err := writeJSON(w, r); err != nil {
			return err
		}
	} else {
		printText(w, r)
	}
	if !ok {
		return withExitCode(ExitNo, nil)
	}
	return nil
}

// ideAbbrev cuts s to n characters (runes), the last one "…", between
// characters so that what it prints stays UTF-8.
func ideAbbrev(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ideConnect connects as the real CLI would (client.Connect;
// IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts), with a bound on the attempt, and
// explains a failure in words a person can act on.
func ideConnect(ctx context.Context, o client.Options) (*client.Client, *client.Plan, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, p, err := client.Connect(cctx, o)
	if err != nil {
		return nil, nil, explainConnect(p, o, err)
	}
	return c, p, nil
}

// connectFailure is a failed connect as the commands report it: the real
// CLI's message (IdeClient.connect in gemini-cli 0.61.0
// packages/core/src/ide/ide-client.ts; when there is no companion at all,
// that fact instead, since the real CLI's words then blame the terminal),
// each endpoint's own failure, and where to look next.
type connectFailure struct {
	msg string
	err error
}

func (e *connectFailure) Error() string { return e.msg }

func (e *connectFailure) Unwrap() error { return e.err }

func explainConnect(p *client.Plan, o client.Options, err error) error {
	var ce *client.ConnectError
	if p == nil || !errors.As(err, &ce) {
		return err
	}
	var b strings.Builder
	if p.Contents == nil && len(p.Endpoints) == 0 {
		dir, what, env := o.Dir, "discovery file", ide.EnvServerPort
		if dir == "" {
			dir = discovery.Dir()
		}
		if p.Choice != nil {
			dir = p.Choice.Dir
		}
		if p.QwenChoice != nil {
			dir, what, env = p.QwenChoice.Dir, "Qwen Code lock file", ide.EnvQwenServerPort
		}
		fmt.Fprintf(&b, "no IDE companion found: no usable %s in %s and no %s; start the companion in your editor", what, dir, env)
	} else {
		b.WriteString(ce.Message)
	}
	for _, a := range ce.Attempts {
		fmt.Fprintf(&b, "\n  %s: %v", a.Endpoint, a.Err)
	}
	b.WriteString("\nRun `gemkit ide doctor` to see what is wrong and what to do.")
	return &connectFailure{msg: b.String(), err: err}
}
