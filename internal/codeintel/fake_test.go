package codeintel

import (
	"context"
	"sync"
)

// fakeSource is a Source answering from memory, for the tools' tests:
// each field is the answer of one method (nil: nothing), errs the error
// of a method by name.
type fakeSource struct {
	// Source answers what is not faked here (nil: a question added to
	// Source panics until a test fakes it), so that a new question
	// touches no fake.
	Source
	status    Status
	defs      map[DocPos][]Location
	impls     map[DocPos][]Location
	refs      map[DocPos][]Location
	hovers    map[DocPos]Hover
	outline   map[string][]Symbol
	symbols   []Symbol
	incoming  map[DocPos][]Call
	outgoing  map[DocPos][]Call
	diags     map[string][]Diagnostic
	stale     map[string]string
	fixes     map[string]string
	errs      map[string]error
	changes   []Change
	asked     []string // method names, in order
	wsQueries []string
	// mu guards asked, wsQueries and changes: a hover asks for the
	// definition beside it.
	mu sync.Mutex
}

func (f *fakeSource) err(m string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, m)
	return f.errs[m]
}

func (f *fakeSource) Status(context.Context, string) (Status, error) {
	return f.status, f.errs["Status"]
}

func (f *fakeSource) Definition(_ context.Context, at DocPos) ([]Location, error) {
	return f.defs[at], f.err("Definition")
}

func (f *fakeSource) Implementations(_ context.Context, at DocPos) ([]Location, error) {
	return f.impls[at], f.err("Implementations")
}

func (f *fakeSource) References(_ context.Context, at DocPos) ([]Location, error) {
	return f.refs[at], f.err("References")
}

func (f *fakeSource) Hover(_ context.Context, at DocPos) (Hover, error) {
	return f.hovers[at], f.err("Hover")
}

func (f *fakeSource) DocumentSymbols(_ context.Context, path string) ([]Symbol, error) {
	return f.outline[path], f.err("DocumentSymbols")
}

func (f *fakeSource) WorkspaceSymbols(_ context.Context, q string) ([]Symbol, error) {
	f.mu.Lock()
	f.wsQueries = append(f.wsQueries, q)
	f.mu.Unlock()
	return f.symbols, f.err("WorkspaceSymbols")
}

func (f *fakeSource) IncomingCalls(_ context.Context, at DocPos) ([]Call, error) {
	return f.incoming[at], f.err("IncomingCalls")
}

func (f *fakeSource) OutgoingCalls(_ context.Context, at DocPos) ([]Call, error) {
	return f.outgoing[at], f.err("OutgoingCalls")
}

func (f *fakeSource) Diagnostics(_ context.Context, paths []string) ([]FileDiagnostics, error) {
	if err := f.err("Diagnostics"); err != nil {
		return nil, err
	}
	var out []FileDiagnostics
	if len(paths) == 0 {
		for p, d := range f.diags {
			out = append(out, FileDiagnostics{Path: p, Diagnostics: d, Stale: f.stale[p], Fix: f.fixes[p]})
		}
		return out, nil
	}
	for _, p := range paths {
		out = append(out, FileDiagnostics{Path: p, Diagnostics: f.diags[p], Stale: f.stale[p], Fix: f.fixes[p]})
	}
	return out, nil
}

func (f *fakeSource) Changed(_ context.Context, ch []Change) error {
	f.mu.Lock()
	f.changes = append(f.changes, ch...)
	f.mu.Unlock()
	return f.err("Changed")
}
