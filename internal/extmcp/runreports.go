package extmcp

import (
	"strings"
	"sync"
	"time"
)

// runReports is what a server's current run was told and refused, for
// its refusal reports (refusals.go): when the run started (Refusal.Start),
// which credentials it is handed but were not found, which refusals
// were said in the log already, and the arguments of the calls in
// flight. It has a lock of its own: the sandbox reports a refusal while
// a start holds the server's mu.
type runReports struct {
	mu sync.Mutex
	// notHanded: the kinds of credentials allowed of which the run's
	// start found no file (Profile.NotHanded).
	notHanded map[string]string
	runStart  time.Time
	// told is what the log said of each host (by Refusal.key): its
	// Background, "" when it was not said to be background.
	told map[string]string
	// readOnly are the other extensions' folders of the run
	// (Profile.ReadOnly), which a refused write names.
	readOnly []string
	// calls are the arguments of the calls in flight (calling), by a
	// number of their own; lower is each one's in lower case, made when
	// a refusal first needs it. They outlive a run: a call may begin
	// before its server starts again.
	calls    map[uint64][]byte
	lower    map[uint64]string
	lastCall uint64
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
	if r.Needed == "" {
		// Refused during a call that names the host: likely needed,
		// as the call's result says (markNeeded), even when servers
		// also reach for it on their own.
		for id, args := range p.calls {
			lower, ok := p.lower[id]
			if !ok {
				lower = strings.ToLower(string(args))
				p.lower[id] = lower
			}
			if r.namedIn(lower) {
				r.Needed, r.Background = namedInArgs, ""
				break
			}
		}
	}
}

// calling records args as the arguments of a call in flight, until
// called is given the number it returns.
func (p *runReports) calling(args []byte) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls, p.lower = map[uint64][]byte{}, map[uint64]string{}
	}
	p.lastCall++
	p.calls[p.lastCall] = args
	return p.lastCall
}

// called forgets the arguments of the call id (calling), which ended.
func (p *runReports) called(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.calls, id)
	delete(p.lower, id)
}

// first reports whether r is to be said in the log: the first of its
// host in the run, or the first that is likely needed of a host said to
// be background (a call named it since).
func (p *runReports) first(r Refusal) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.told == nil {
		p.told = map[string]string{}
	}
	bg, told := p.told[r.key()]
	if told && (bg == "" || r.Background != "") {
		return false
	}
	p.told[r.key()] = r.Background
	return true
}
