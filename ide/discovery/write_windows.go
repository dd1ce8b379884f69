//go:build windows

package discovery

import (
	"io/fs"

	"golang.org/x/sys/windows"
)

// ProcessAlive reports whether process pid is still running. Writers
// (stale-file cleanup) and the companion (watching its editor) use it;
// readers use PIDAlive, which follows the real client's rules (isPidAlive in
// gemini-cli 0.61.0 packages/core/src/ide/ide-connection-utils.ts) instead.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return err == windows.ERROR_ACCESS_DENIED
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return true
	}
	return code == 259 // STILL_ACTIVE
}

// ownedByCurrentUser is true on Windows, where the per-user temporary
// directory already separates users.
func ownedByCurrentUser(fs.FileInfo) bool { return true }
