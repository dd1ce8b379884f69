//go:build !unix

package lspclient

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

// killGroup ends the server (its children end with their pipes).
func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
