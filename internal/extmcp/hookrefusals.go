package extmcp

import (
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/hookout"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// A switched extension's command hook is refused by the same sandbox as
// its servers: what the sandbox refused a hook's run becomes a Refusal
// here, beside the servers' (refusal), kept in the same file, told by
// the same words.

// HookRun is one run of a switched extension's command hook, as
// KeepHookRefusals reads it: internal/exthook's Result, and where it ran.
type HookRun struct {
	// Extension and Hook name the hook (Hook is its label).
	Extension, Hook string
	// Workspace is the session's folder, Dir its extension's folder.
	Workspace, Dir string
	// Widening is what the person allowed the hook.
	Widening extension.Widening
	// Start is when the run started.
	Start time.Time
	// ExitCode, Denied, Stderr and Dropped are exthook.Result's.
	ExitCode int
	Denied   []netproxy.Denial
	Stderr   string
	Dropped  []hookout.Drop
	// To is the agent gemkit answered in the hook's place ("" for
	// Gemini CLI; Claude Code for a switched plugin's hook).
	To string
}

// KeepHookRefusals keeps what the sandbox refused the hook (its
// connections, the writes the watch of its writes saw refused, and the
// writes its stderr says were refused) and what gemkit left out of its
// answer in the refusals file that doctor and describe read.
func KeepHookRefusals(run HookRun) {
	ext, label, ws, dir, w, start := run.Extension, run.Hook, run.Workspace, run.Dir, run.Widening, run.Start
	allow := "gemkit extensions sandbox " + extension.Printable(ext) + " --hook " + label
	var rs []Refusal
	var seen []string
	for _, d := range run.Denied {
		r := Refusal{At: d.At, Start: start, Extension: ext, Hook: label, Host: d.Host, Reason: d.Reason, Count: d.Count}
		switch {
		case d.Method == sandbox.WriteMethod:
			// A write, by the path its call named: no host.
			if d.Path == "" {
				continue
			}
			r.Host, r.Path = "", d.Path
			r.Reason, r.Allow = hookWriteReason(d.Reason, allow)
			seen = append(seen, d.Path)
		case d.Method == sandbox.UnixMethod:
			r.UnixSocket, r.Allow = true, allow+" --allow-unix-sockets"
		case d.Method == sandbox.ListenMethod:
			// No widening: as for a server (refusal), the port
			// would be in the sandbox's own network.
			r.Listen = true
			r.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		case d.Method == netproxy.LookupMethod:
			r.Lookup = true
		case d.Port > 0:
			r.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
			r.Direct = d.Method == sandbox.DirectMethod
		}
		if _, err := permission.ParseHost(r.Host); err == nil && r.Allow == "" && (d.Reason == netproxy.NotAllowed || d.Reason == netproxy.LookupNotAllowed || d.Reason == sandbox.DirectNotAllowed) {
			r.Allow = allow + " --allow-host " + r.Host
		}
		if r.At.IsZero() {
			r.At = time.Now()
		}
		rs = append(rs, r)
	}
	for _, p := range RefusedWritePaths(writeErrorText(run)) {
		if slices.Contains(seen, p) {
			// The watch of its writes told of it already.
			continue
		}
		r := Refusal{At: time.Now(), Start: start, Extension: ext, Hook: label, Path: p}
		switch {
		case fsutil.Within(dir, p):
			r.Reason = "its extension's folder, read-only to its hooks whatever is allowed; its stderr said a write there was refused"
		case fsutil.Within(ws, p) && w.Write == "":
			r.Reason = "the workspace is read-only to its hooks; its stderr said a write there was refused"
			r.Allow = allow + " --allow-write workspace"
		case fsutil.Within(ws, p):
			r.Reason = "a protected path of the workspace, read-only whatever is allowed; its stderr said a write there was refused"
		default:
			r.Reason = "outside what its hooks may write, which is nothing but their temporary folder (and the workspace when allowed); its stderr said a write there was refused"
		}
		rs = append(rs, r)
	}
	for _, d := range run.Dropped {
		r := Refusal{At: time.Now(), Start: start, Extension: ext, Hook: label, Answer: d.Field, Cut: d.Cut, Reason: d.Why, To: run.To}
		if d.Field == "" {
			r.Answer = AllOfAnswer
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return
	}
	path, err := RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return
	}
	_ = KeepRefusals(path, rs...)
}

// notExecutable is the exit code of a shell that found the command but
// could not execute it (a script without its execute bit), which it
// tells as "PATH: Permission denied", as a refused write is told.
const notExecutable = 126

// writeErrorText is the hook's stderr to look for refused writes in: all
// of it, but when the shell could not execute the command, the lines
// that say so, which name the script and no write.
func writeErrorText(run HookRun) string {
	if run.ExitCode != notExecutable {
		return run.Stderr
	}
	lines := strings.Split(run.Stderr, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool {
		return strings.HasSuffix(strings.TrimSpace(l), ": Permission denied")
	})
	return strings.Join(lines, "\n")
}

// hookWriteReason is why the sandbox refused a hook a write, in the
// person's words, from why the watch of its writes refused it (a
// sandbox.Write* reason), with the command that allows it where one
// does (allow is the command that widens the hook).
func hookWriteReason(why, allow string) (reason, cmd string) {
	switch why {
	case sandbox.WriteWorkspace:
		return "the workspace is read-only to its hooks", allow + " --allow-write workspace"
	case sandbox.WriteExtension:
		return "its extension's folder, read-only to its hooks whatever is allowed", ""
	case sandbox.WriteProtected:
		return "a protected path of the workspace, read-only whatever is allowed: .git, hooks, .env, editors' and agents' settings and instructions (GEMINI.md, CLAUDE.md, AGENTS.md, .mcp.json)", ""
	case sandbox.WriteReadOnly:
		return "the folder of another extension, read-only to every sandboxed process whatever is allowed", ""
	}
	return "outside what its hooks may write, which is nothing but their temporary folder (and the workspace when allowed)", ""
}
