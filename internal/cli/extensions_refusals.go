package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// recentRefusals are the refusals of the extensions' sandboxed MCP
// servers that gemkit mcp kept (extmcp.RefusalsPath), by extension,
// oldest first. The file is gemkit's own, closed to every sandboxed
// process; one that cannot be read gives none, for doctor and describe
// are not the place to fail on it.
func recentRefusals() map[string][]extmcp.Refusal {
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return nil
	}
	all, err := extmcp.ReadRefusals(path)
	if err != nil {
		return nil
	}
	by := map[string][]extmcp.Refusal{}
	for _, r := range all {
		by[r.Extension] = append(by[r.Extension], r)
	}
	return by
}

// stillRefused are the reports of rs (one per start of a server, each
// host once) that still hold for the extension as it is: none from
// before since (when it was last agreed to, or its manifest last
// changed: refusals belong to the extension as it was then), and none
// the person has allowed since, w being the manifest's grant with the
// person's widening on top (a host now allowed, a write in the
// workspace, credentials handed). A report left with nothing is
// dropped.
//
// A hook's refusals are answered by what the person allowed that hook
// (hooks, by label), not the servers' widening.
func stillRefused(rs []extmcp.Refusal, w extension.Widening, hooks map[string]extension.Widening, since time.Time) []extmcp.Report {
	var out []extmcp.Report
	for _, rp := range extmcp.Reports(rs) {
		rp = rp.Without(func(r extmcp.Refusal) bool {
			start := r.Start
			if start.IsZero() {
				start = r.At
			}
			allowed := w
			if r.Hook != "" {
				allowed = hooks[r.Hook]
			}
			return start.Before(since) || r.AllowedBy(allowed)
		})
		if len(rp.Refusals) > 0 {
			out = append(out, rp)
		}
	}
	return out
}

// refusalsSince is when the extension in became what it is now, for
// stillRefused: the later of its last consent and its manifest's last
// change.
func refusalsSince(st *extension.Store, in *extension.Installed) time.Time {
	since := manifestChanged(in)
	if m := in.Manifest(); m != nil {
		if at := st.ConsentGrantedAt(m.Name); at.After(since) {
			since = at
		}
	}
	return since
}

// forgetRefusals takes the extension name's refusals out of the file
// gemkit mcp keeps them in: it was uninstalled or updated, and what was
// refused belongs to what it was.
func forgetRefusals(name string) error {
	path, err := extmcp.RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return err
	}
	return extmcp.ForgetRefusals(path, name)
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
// extension's servers lately: one per start of a server, each host
// once, with one command for what it likely needs.
func refusalFindings(name string, rps []extmcp.Report) []finding {
	var fs []finding
	for _, rp := range rps {
		lines := rp.Lines()
		fix := rp.Allow()
		if fix != "" {
			fix = "`" + fix + "` allows what it likely needs (what servers do in the background left out)"
		}
		fs = append(fs, finding{Level: "note", Extension: name, Message: strings.Join(lines, "\n      - "), Fix: fix})
	}
	return fs
}

// writeRefusals writes describe's lines on what the sandbox refused the
// servers lately: the last three starts' reports.
func writeRefusals(w io.Writer, rps []extmcp.Report) {
	if len(rps) == 0 {
		return
	}
	fmt.Fprintln(w, "  Refused lately in gemkit's sandbox:")
	for _, rp := range rps[max(0, len(rps)-3):] {
		lines := rp.Lines()
		fmt.Fprintf(w, "      %s\n", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "        - %s\n", l)
		}
		if a := rp.Allow(); a != "" {
			fmt.Fprintf(w, "        to allow what it likely needs: %s\n", a)
		}
	}
}
