package discovery

import (
	"context"
	"os/exec"
	"strconv"
	"time"
)

// psLookup reads a process with `ps -o ppid=,command= -p PID`, as the real
// client does on macOS and other Unixes, with the same 3-second bound.
func psLookup(ctx context.Context, pid int) (ppid int, command string) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ps", "-o", "ppid=,command=", "-p", strconv.Itoa(pid)).Output()
	if err != nil {
		return 0, ""
	}
	return parsePSLine(string(out))
}
