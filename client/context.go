package client

import (
	"sort"

	"github.com/gemkit/gemkit/ide"
)

// NormalizeContext applies the real client's normalisation
// (IdeContextStore.set in gemini-cli 0.61.0
// packages/core/src/ide/ideContext.ts) to a context update, on a copy: open
// files sorted by timestamp, newest first (stable for equal timestamps); only
// the newest file may be active, and when it is not, none is; every other
// file loses its cursor and selection; the active file's selection is cut to
// ide.MaxSelectedTextLength UTF-16 code units with ide.TruncatedSuffix
// appended; at most ide.MaxOpenFiles files are kept.
func NormalizeContext(in ide.Context) ide.Context {
	if in.WorkspaceState == nil {
		return in
	}
	ws := *in.WorkspaceState
	if ws.IsTrusted != nil {
		t := *ws.IsTrusted
		ws.IsTrusted = &t
	}
	files := make([]ide.File, len(ws.OpenFiles))
	copy(files, ws.OpenFiles)
	for i := range files {
		if files[i].Cursor != nil {
			c := *files[i].Cursor
			files[i].Cursor = &c
		}
	}
	if len(files) > 0 {
		sort.SliceStable(files, func(i, j int) bool { return files[i].Timestamp > files[j].Timestamp })
		start := 1
		if !files[0].IsActive {
			start = 0
		}
		for i := start; i < len(files); i++ {
			files[i].IsActive = false
			files[i].Cursor = nil
			files[i].SelectedText = ""
		}
		if files[0].IsActive {
			files[0].SelectedText = truncateUTF16(files[0].SelectedText, ide.MaxSelectedTextLength)
		}
		if len(files) > ide.MaxOpenFiles {
			files = files[:ide.MaxOpenFiles]
		}
	}
	if ws.OpenFiles != nil {
		ws.OpenFiles = files
	}
	return ide.Context{WorkspaceState: &ws}
}

// truncateUTF16 cuts s to at most n UTF-16 code units, as JavaScript's
// substring does, and appends the truncation marker when it cut. A
// surrogate pair straddling the cut is dropped whole, since half of one
// cannot be written in UTF-8.
func truncateUTF16(s string, n int) string {
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i] + ide.TruncatedSuffix
		}
		units += w
	}
	return s
}
