package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
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
// host now allowed, a write in the workspace now allowed; and those no
// widening allows that happened before changed, when the extension's
// manifest last changed (a manifest that now points its server's state
// at its data folder): only a change of the extension answers them.
func stillRefused(rs []extmcp.Refusal, w extension.Widening, changed time.Time) []extmcp.Refusal {
	var out []extmcp.Refusal
	for _, r := range rs {
		var allowed bool
		switch {
		case r.Allow == "":
			allowed = r.At.Before(changed)
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

// manifestChanged is when the manifest of in last changed, zero when
// that cannot be told.
func manifestChanged(in *extension.Installed) time.Time {
	if in == nil || in.Extension == nil {
		return time.Time{}
	}
	// The extension's folder is its author's: looked at through a Root.
	root, err := fsutil.OpenRoot(in.Extension.Dir)
	if err != nil {
		return time.Time{}
	}
	defer root.Close()
	fi, err := root.Stat(extension.ManifestFile)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
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
