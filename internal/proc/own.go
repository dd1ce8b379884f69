package proc

import (
	"errors"
	"os/exec"
)

// Own makes cmd, before it starts, a child gemkit owns: the leader of a
// process group of its own, so that KillGroup (and, for a command made by
// exec.CommandContext, the end of its context) ends it with everything it
// started (an MCP server's node, a companion's helpers); and on Linux it
// gets SIGKILL when gemkit's process goes, however it goes, instead of
// running on with its pipes held by a child of its own. Pdeathsig is tied
// to the thread that started the child; Go ends a thread only when a
// goroutine that locked it returns without unlocking, which gemkit does
// not do. On Windows Own changes nothing.
//
// A child that must outlive gemkit (the broker of internal/lspbroker), or
// that must stay in the terminal's foreground group (an $EDITOR), is not
// owned this way.
func Own(cmd *exec.Cmd) {
	own(cmd)
	if cmd.Cancel != nil {
		cmd.Cancel = func() error { return KillGroup(cmd) }
	}
}

// StartOwned is Own, then cmd.Start.
func StartOwned(cmd *exec.Cmd) error {
	Own(cmd)
	return cmd.Start()
}

// KillGroup ends cmd's process group with SIGKILL: the child that Own
// made its leader and whatever it started and left there. It returns
// os.ErrProcessDone when nothing of the group is left, and does nothing
// for a command that has not started.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return errors.New("proc: the command has not started")
	}
	return killGroup(cmd.Process.Pid)
}
