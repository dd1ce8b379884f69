package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/term"
)

// agentShells are the variables agents set in the environment of the
// commands their model runs through a shell tool, by which a command
// knows that a model, not the person, may be the one running it. The
// same variables are set for the commands a person types in the agent's
// own shell mode.
var agentShells = []struct{ env, agent string }{
	// Gemini CLI 0.61: ShellExecutionService (packages/core/src/services/
	// shellExecutionService.ts) runs run_shell_command and ! shell mode
	// with GEMINI_CLI=1.
	{"GEMINI_CLI", "Gemini CLI"},
	// Claude Code 2.1.330: its Bash tool and ! bash mode run with
	// CLAUDECODE=1.
	{"CLAUDECODE", "Claude Code"},
	// Codex 0.169: its exec tool sets CODEX_THREAD_ID.
	{"CODEX_THREAD_ID", "Codex"},
}

// agentShell names the agent whose shell runs this command, or "".
func (a *app) agentShell() string {
	for _, s := range agentShells {
		if a.getenv(s.env) != "" {
			return s.agent
		}
	}
	return ""
}

// openTTY opens the controlling terminal; tests replace it.
var openTTY = func() (*os.File, error) { return os.OpenFile("/dev/tty", os.O_RDWR, 0) }

// personConfirms stands between a command line that records consent to
// ext (consent --grant, --consent, a y/N question) and the record when an
// agent's shell runs the command, where a model may have written it: the
// person confirms by typing the extension's name on the terminal, which a
// model's shell tool has no way to answer (it passes a command, not
// keystrokes), or, with no terminal to ask on (Claude Code's Bash tool
// has none), it fails with words sending the person to a
// terminal of their own. Outside an agent the person typed the command
// and it goes on as it always did. It reports whether the person agreed.
//
// It is a guard against a model deciding for the person unseen, not a
// wall: the agent's shell runs as the person's own user, so a command in
// it can remove the variable (env -u), fake a terminal (script, a Python
// pty) or write the consent record itself. A person who approves such a
// command in the agent is the person consenting, and the words asked and
// refused with say so. docs/sandbox.md ("Consent") says what remains.
//
// again is the command the person runs in a terminal of their own when
// there is none here; "" is `gemkit extensions consent EXT --grant`.
func (a *app) personConfirms(ctx context.Context, ext, again string) (bool, error) {
	agent := a.agentShell()
	if agent == "" {
		return true, nil
	}
	name := extension.Printable(ext)
	if again == "" {
		again = "`gemkit extensions consent " + name + " --grant`"
	}
	tty, err := openTTY()
	if err != nil {
		return false, withExitCode(ExitNo, fmt.Errorf("consent to %s not given: this command runs in %s's shell, where its model may be the one running it, and there is no terminal to ask you on. Only you can agree: run %s in a terminal of your own. %s", name, agent, again, approvalWords(agent)))
	}
	defer tty.Close()
	fmt.Fprintf(tty, "%s\nThis command runs in %s's shell, where its model may be the one running it. Only you can agree: type %s and Enter to agree to the above, anything else to refuse: ", approvalWords(agent), agent, name)
	answer, err := term.ReadLine(ctx, tty)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(answer) == ext, nil
}

// readBeforeAgreeing says extension.ReadBeforeAgreeing on w after a
// consent text, when personConfirms is about to ask (in an agent's
// shell); on a terminal of the person's own running the command is
// agreeing, and nothing is asked.
func (a *app) readBeforeAgreeing(w io.Writer) {
	if a.agentShell() != "" {
		fmt.Fprintln(w, extension.ReadBeforeAgreeing)
	}
}

// approvalWords say what this question is not: a command in the agent's
// shell runs as the person, so whoever approves one that grants consent
// (or that works around this question) consents.
func approvalWords(agent string) string {
	return fmt.Sprintf("Approving, in %s, a command that grants consent is consenting: the command runs as you and could write the consent record itself, so this question keeps a model from deciding for you unseen, and is no wall against a command you approve.", agent)
}

// notTyped is the refusal when the person did not type the name.
func notTyped(ext string) error {
	return withExitCode(ExitNo, errors.New("consent to "+extension.Printable(ext)+" not given: its name was not typed"))
}
