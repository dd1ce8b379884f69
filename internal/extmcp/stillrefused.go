package extmcp

import (
	"os"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// RecentRefusals are the refusals of the extensions' sandboxed MCP
// servers and hooks that gemkit kept (RefusalsPath), by extension,
// oldest first. The file is gemkit's own, closed to every sandboxed
// process; one that cannot be read gives none, for doctor and describe
// are not the place to fail on it.
func RecentRefusals() map[string][]Refusal {
	path, err := RefusalsPath(map[string]string{"HOME": os.Getenv("HOME")})
	if err != nil {
		return nil
	}
	all, err := ReadRefusals(path)
	if err != nil {
		return nil
	}
	by := map[string][]Refusal{}
	for _, r := range all {
		by[r.Extension] = append(by[r.Extension], r)
	}
	return by
}

// StillRefused are the reports of rs (one per start of a server, each
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
func StillRefused(rs []Refusal, w extension.Widening, hooks map[string]extension.Widening, since time.Time) []Report {
	var out []Report
	for _, rp := range Reports(rs) {
		rp = rp.Without(func(r Refusal) bool {
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

// RefusalsSince is when the extension in became what it is now, for
// StillRefused: the later of its last consent and its manifest's last
// change.
func RefusalsSince(st *extension.Store, in *extension.Installed) time.Time {
	since := manifestChanged(in)
	if m := in.Manifest(); m != nil {
		if at := st.ConsentGrantedAt(m.Name); at.After(since) {
			since = at
		}
	}
	return since
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
