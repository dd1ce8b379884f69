//go:build unix

package lspclient

import (
	"os/exec"
	"syscall"
)

// killGroup ends the process group pid leads: the server and what it
// started.
func killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}

// setProcAttrGroup puts the server in a process group of its own, so that
// killGroup reaches its children (tsserver, go list).
func setProcAttrGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}
