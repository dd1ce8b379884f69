//go:build unix && !linux

package lspclient

import "os/exec"

// setProcAttr starts the server in its own process group.
func setProcAttr(cmd *exec.Cmd) { setProcAttrGroup(cmd) }
