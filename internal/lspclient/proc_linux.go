package lspclient

import (
	"os/exec"
	"syscall"
)

// setProcAttr starts the server in its own process group, and has Linux
// end it when gemkit's process goes, however it goes (a server whose
// parent was killed would otherwise run on, its stdin still open in a
// child of its own).
func setProcAttr(cmd *exec.Cmd) {
	setProcAttrGroup(cmd)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
