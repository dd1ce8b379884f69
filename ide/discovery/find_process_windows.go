//go:build windows

package discovery

import (
	"context"
	"os/exec"
	"time"
)

// windowsTable reads the whole process table once, as the real client does
// (getProcessTableWindows in gemini-cli 0.61.0
// packages/core/src/ide/process-utils.ts), through PowerShell's
// Win32_Process.
func windowsTable(ctx context.Context) map[int]windowsProcess {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	const q = "Get-CimInstance Win32_Process | Select-Object ProcessId,ParentProcessId,Name,CommandLine | ConvertTo-Json -Compress"
	out, err := exec.CommandContext(ctx, "powershell", "-NoProfile", "-NonInteractive", "-Command", q).Output()
	table := map[int]windowsProcess{}
	if err != nil {
		return table
	}
	return parseWindowsTable(out)
}

func platformLookup() ProcessLookup {
	return func(ctx context.Context, pid int) (int, string) {
		p, ok := windowsTable(ctx)[pid]
		if !ok {
			return 0, ""
		}
		return p.PPID, p.Command
	}
}

func platformFind(ctx context.Context, self int) (IDEProcess, bool) {
	return windowsIDEProcess(windowsTable(ctx), self), true
}
