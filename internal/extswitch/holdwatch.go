package extswitch

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// HoldChanged holds every switched extension of the store that consent
// no longer covers, logging each new hold.
func (s *Switch) HoldChanged(log *slog.Logger) {
	all, err := s.Store.List()
	if err != nil {
		return
	}
	choices, err := s.Store.ServerChoices()
	if err != nil {
		return
	}
	for _, in := range all {
		if words, err := s.HoldIfChanged(in, choices); err != nil {
			log.Warn("holding a changed extension in Gemini CLI", "extension", in.Name, "err", err)
		} else if words != "" {
			log.Warn(words)
		}
	}
}

// extensionFolder is the folder of in's files: its linked source, else
// its entry; "" when neither is known.
func extensionFolder(in *extension.Installed) string {
	switch {
	case in.Extension != nil:
		return in.Extension.Dir
	case in.Metadata != nil && in.Metadata.Type == extension.SourceLink && filepath.IsAbs(in.Metadata.Source):
		return in.Metadata.Source
	}
	return in.Entry
}

// HoldsAfter is how long after its start gemkit mcp first looks for
// changed switched extensions and begins to watch them (Watch): after a
// client's first list and the starts of the servers behind it.
const HoldsAfter = 3 * time.Second

// holdSettle is how long a switched extension's folder is left to
// settle after a change before its consent is checked.
const holdSettle = 300 * time.Millisecond

// holdWatch is Watch's state: a watch of each switched extension's
// folder, by its entry.
type holdWatch struct {
	s   *Switch
	ctx context.Context
	log *slog.Logger
	mu  sync.Mutex
	// watches are the folders watched, by entry.
	watches map[string]*folderWatch
	// checking is held by a check under way, which the end waits for:
	// a hold is written whole (enablement, excluded names, records) or
	// not begun, whenever gemkit mcp ends.
	checking sync.Mutex
}

// folderWatch is the watch of one switched extension's folder, and the
// timer that checks it once changes settle.
type folderWatch struct {
	stop  context.CancelFunc
	timer *time.Timer
}

// Watch holds a switched extension as soon as its files change while
// gemkit mcp runs, until ctx ends: it watches the folder of every
// switched extension (fsutil.WatchTree), checks consent once the changes
// settle, and looks for newly switched extensions when the choices
// change.
func (s *Switch) Watch(ctx context.Context, log *slog.Logger) {
	w := &holdWatch{s: s, ctx: ctx, log: log, watches: map[string]*folderWatch{}}
	// The first look and the watches wait for gemkit mcp's start to be
	// over: both walk each switched extension's folder (a node_modules'
	// thousands of files), whose CPU the servers' first starts, on the
	// machine's few cores, would pay. The look finds a change made
	// meanwhile; a gemkit mcp that ends first looks as it ends.
	select {
	case <-ctx.Done():
		s.HoldChanged(log)
		return
	case <-time.After(HoldsAfter):
	}
	w.scan()
	s.HoldChanged(log)
	stamp := s.Store.ServerChoicesStamp()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.end()
			return
		case <-t.C:
			if now := s.Store.ServerChoicesStamp(); now != stamp {
				stamp = now
				w.scan()
			}
		}
	}
}

// end stops every watch and waits for a check under way.
func (w *holdWatch) end() {
	w.mu.Lock()
	for _, f := range w.watches {
		f.stop()
		f.timer.Stop()
	}
	w.mu.Unlock()
	w.checking.Lock()
	w.checking.Unlock()
}

// check holds the extension entry if consent no longer covers it.
func (w *holdWatch) check(entry string) {
	w.checking.Lock()
	defer w.checking.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	in, err := w.s.Store.Get(entry)
	if err != nil {
		return
	}
	choices, err := w.s.Store.ServerChoices()
	if err != nil {
		return
	}
	if words, err := w.s.HoldIfChanged(in, choices); err != nil {
		w.log.Warn("holding a changed extension in Gemini CLI", "extension", entry, "err", err)
	} else if words != "" {
		w.log.Warn(words)
	}
}

// scan watches the folder of every switched extension, and stops
// watching those no longer switched.
func (w *holdWatch) scan() {
	all, err := w.s.Store.List()
	if err != nil {
		return
	}
	choices, err := w.s.Store.ServerChoices()
	if err != nil {
		return
	}
	now := map[string]string{}
	for _, in := range all {
		if _, ok := SwitchedChoice(in, choices); ok {
			// Watched even while it cannot be read (a manifest being
			// written): the watch sees it readable again.
			if d := extensionFolder(in); d != "" {
				now[in.Name] = d
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for entry, f := range w.watches {
		if _, ok := now[entry]; !ok {
			f.stop()
			delete(w.watches, entry)
		}
	}
	for entry, dir := range now {
		if w.watches[entry] != nil {
			continue
		}
		wctx, stop := context.WithCancel(w.ctx)
		f := &folderWatch{stop: stop}
		f.timer = time.AfterFunc(time.Hour, func() { w.check(entry) })
		f.timer.Stop()
		w.watches[entry] = f
		go fsutil.WatchTree(filepath.Clean(dir), wctx.Done(), func() bool {
			f.timer.Reset(holdSettle)
			return false
		})
	}
}
