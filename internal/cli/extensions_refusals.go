package cli

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
)

// recentRefusals are the refusals of the extensions' sandboxed MCP
// servers that gemkit mcp kept (extmcp.RefusalsPath), by extension: the
// latest of each distinct one (server, what it tried, why), oldest
// first. The file is gemkit's own, closed to every sandboxed process; one
// that cannot be read gives none, for doctor and describe are not the
// place to fail on it.
func recentRefusals() map[string][]extmcp.Refusal {
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return nil
	}
	all, err := extmcp.ReadRefusals(path)
	if err != nil {
		return nil
	}
	type key struct {
		ext, server, host, reason string
		lookup                    bool
	}
	seen := map[key]bool{}
	by := map[string][]extmcp.Refusal{}
	for _, r := range slices.Backward(all) {
		k := key{r.Extension, r.Server, r.Host, r.Reason, r.Lookup}
		if !seen[k] {
			seen[k] = true
			by[r.Extension] = append(by[r.Extension], r)
		}
	}
	for _, rs := range by {
		slices.Reverse(rs)
	}
	return by
}

// stillRefused leaves out the refusals the person has allowed since: a
// host now allowed, a write in the workspace now allowed.
func stillRefused(rs []extmcp.Refusal, w extension.Widening) []extmcp.Refusal {
	var out []extmcp.Refusal
	for _, r := range rs {
		var allowed bool
		switch {
		case r.Allow == "":
		case r.UnixSocket:
			allowed = w.UnixSockets
		case r.Path != "":
			allowed = w.Write == extension.AccessWorkspace
		default:
			allowed = slices.Contains(w.Hosts, r.Host)
		}
		if allowed {
			continue
		}
		out = append(out, r)
	}
	return out
}

// refusalFindings are doctor's notes on what the sandbox refused an
// extension's servers lately.
func refusalFindings(name string, rs []extmcp.Refusal) []finding {
	var fs []finding
	for _, r := range rs {
		fs = append(fs, finding{Level: "note", Extension: name, Message: refusalLine(r)})
	}
	return fs
}

// refusalLine is a refusal in words, with when it happened last.
func refusalLine(r extmcp.Refusal) string {
	return r.String() + " (last at " + r.At.Local().Format("2006-01-02 15:04:05") + ")"
}

// writeRefusals writes describe's lines on what the sandbox refused the
// servers lately: the last five.
func writeRefusals(w io.Writer, rs []extmcp.Refusal) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "  Refused lately in gemkit's sandbox:")
	for _, r := range rs[max(0, len(rs)-5):] {
		fmt.Fprintf(w, "      %s\n", refusalLine(r))
	}
}
