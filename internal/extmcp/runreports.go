package extmcp

import (
	"sync"
	"time"
)

// runReports is what a server's current run was told and refused, for
// its refusal reports (refusals.go): when the run started (Refusal.Start),
// which credentials it is handed but were not found, and which refusals
// were said in the log already. It has a lock of its own: the sandbox
// reports a refusal while a start holds the server's mu.
type runReports struct {
	mu sync.Mutex
	// notHanded: the kinds of credentials allowed of which the run's
	// start found no file (Profile.NotHanded).
	notHanded map[string]string
	runStart  time.Time
	told      map[string]bool // by Refusal.key
	// readOnly are the other extensions' folders of the run
	// (Profile.ReadOnly), which a refused write names.
	readOnly []string
}

// begin starts the reports of a new run.
func (p *runReports) begin(notHanded map[string]string, readOnly []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notHanded, p.readOnly = notHanded, readOnly
	p.runStart, p.told = time.Now().UTC(), nil
}

// withRun adds to r what the run knows: when it started, which other
// extension's folder a refused write was in (own is the server's own
// extension's folder), and why credentials it is handed did not reach
// it.
func (p *runReports) withRun(r *Refusal, own string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r.Start = p.runStart
	if r.Path != "" && r.Reason == readOnlyReason {
		// The watch of writes knows the rule, the run which folder.
		if o := other(p.readOnly, own, r.Path); o != "" {
			r.Reason = "the folder of another extension (" + Printable(o) + "), read-only to every sandboxed process whatever is allowed"
		}
	}
	if r.Handed {
		for _, k := range r.Credentials {
			if why, ok := p.notHanded[k]; ok {
				r.Missing = why
			}
		}
	}
}

// first reports whether r is the first of its kind in the run, which is
// said in the log once.
func (p *runReports) first(r Refusal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.told == nil {
		p.told = map[string]bool{}
	}
	first := !p.told[r.key()]
	p.told[r.key()] = true
	return first
}
