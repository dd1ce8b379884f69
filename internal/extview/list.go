package extview

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// List is each installed extension of all as list shows it: its Row, or
// with full its Entry (a few more file reads each: skills, agents,
// hooks, .env), spread over the CPUs as Store.List does the manifests;
// with its conflicts, where its servers run and whether gemkit mcp
// serves them, where each of its parts that runs code runs, and its
// hold. ens are their enablements (Enablements). err is why the
// switch's records or the host's settings could not be read, for the
// caller to tell: what they would say is left out.
func List(sw *extswitch.Switch, all []*extension.Installed, ens []extension.Enablement, full bool) (items []Item, conflicts []extension.Conflict, err error) {
	st := sw.Store
	entry := Row
	if full {
		entry = Entry
	}
	items = make([]Item, len(all))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(all)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(all); i = int(next.Add(1) - 1) {
				items[i] = entry(st, all[i], &ens[i])
			}
		})
	}
	wg.Wait()
	conflicts = extension.Conflicts(all)
	for i, in := range all {
		items[i].Conflicts = extension.ConflictsOf(conflicts, in.Entry)
	}
	choices, gs, gsErr, err := sw.ServerSettings()
	FillServers(sw, items, all, choices, gs.Excluded, gsErr)
	for i, in := range all {
		if m := in.Manifest(); m != nil {
			if gsErr == nil {
				// Where each part runs is read from the file.
				items[i].CodeParts = sw.CodeParts(in, choices[m.Name], gs)
			}
		}
	}
	if holds, err := st.Holds(); err == nil {
		for i, in := range all {
			if h, ok := holds[in.Name]; ok {
				items[i].HeldInGemini = &h
			}
		}
	}
	return items, conflicts, err
}
