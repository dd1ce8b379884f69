package companion

import (
	"os"
	"path/filepath"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/gemkit/gemkit/ide"
)

// openFiles keeps the editor's open files the way the official companion
// (gemini-cli 0.61.0 packages/vscode-ide-companion/src/open-files-manager.ts)
// does: newest first, at most ide.MaxOpenFiles, only the first one active and
// carrying a cursor and selection. Every change schedules one context update
// after the debounce.
type openFiles struct {
	debounce time.Duration
	emit     func()

	mu      sync.Mutex
	files   []ide.File // newest first
	lastTS  int64
	timer   alarm // made at the first change
	stopped bool
}

func newOpenFiles(debounce time.Duration, emit func()) *openFiles {
	return &openFiles{debounce: debounce, emit: emit}
}

// onDisk reports whether path is an absolute path to a regular file that
// exists: virtual and unsaved documents never enter the context.
func onDisk(path string) bool {
	if !filepath.IsAbs(path) {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// timestamp returns milliseconds since the epoch, strictly increasing so
// that files focused in the same millisecond still sort in event order.
func (o *openFiles) timestamp() int64 {
	ts := time.Now().UnixMilli()
	if ts <= o.lastTS {
		ts = o.lastTS + 1
	}
	o.lastTS = ts
	return ts
}

// focus makes path the active file at the front of the list.
func (o *openFiles) focus(path string, cursor *ide.Cursor, selected string) bool {
	path = filepath.Clean(path)
	if !onDisk(path) {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removeLocked(path)
	if len(o.files) > 0 {
		o.files[0].IsActive = false
		o.files[0].Cursor = nil
		o.files[0].SelectedText = ""
	}
	f := ide.File{Path: path, Timestamp: o.timestamp(), IsActive: true, SelectedText: truncateSelection(selected)}
	if cursor != nil {
		c := *cursor
		f.Cursor = &c
	}
	o.files = append([]ide.File{f}, o.files...)
	if len(o.files) > ide.MaxOpenFiles {
		o.files = o.files[:ide.MaxOpenFiles]
	}
	o.scheduleLocked()
	return true
}

// selection moves the cursor or selection of the active file; a selection
// in another file focuses that file first.
func (o *openFiles) selection(path string, cursor ide.Cursor, selected string) bool {
	path = filepath.Clean(path)
	o.mu.Lock()
	if len(o.files) == 0 || o.files[0].Path != path {
		o.mu.Unlock()
		return o.focus(path, &cursor, selected)
	}
	defer o.mu.Unlock()
	c := cursor
	o.files[0].Cursor = &c
	o.files[0].SelectedText = truncateSelection(selected)
	o.scheduleLocked()
	return true
}

// remove drops path (closed or deleted). When the active file goes, the
// next one does not become active: the editor says which file it focuses.
func (o *openFiles) remove(path string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.removeLocked(filepath.Clean(path)) {
		return false
	}
	o.scheduleLocked()
	return true
}

func (o *openFiles) removeLocked(path string) bool {
	for i, f := range o.files {
		if f.Path == path {
			o.files = append(o.files[:i], o.files[i+1:]...)
			return true
		}
	}
	return false
}

// rename moves an open file to a new path, keeping its place and state.
// The new path need not be on disk yet: editors rename a buffer before
// they write it ("save as").
func (o *openFiles) rename(oldPath, newPath string) bool {
	oldPath, newPath = filepath.Clean(oldPath), filepath.Clean(newPath)
	o.mu.Lock()
	defer o.mu.Unlock()
	idx := -1
	for i, f := range o.files {
		if f.Path == oldPath {
			idx = i
			break
		}
	}
	if idx < 0 || oldPath == newPath {
		return false
	}
	for i, f := range o.files {
		if f.Path == newPath {
			o.files = append(o.files[:i], o.files[i+1:]...)
			if i < idx {
				idx--
			}
			break
		}
	}
	o.files[idx].Path = newPath
	o.scheduleLocked()
	return true
}

// touch schedules a context update without a change of files (for a
// change of trust).
func (o *openFiles) touch() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.scheduleLocked()
}

// scheduleLocked restarts the debounce timer: one update goes out once no
// change has come for the debounce.
func (o *openFiles) scheduleLocked() {
	if o.stopped {
		return
	}
	if o.timer == nil {
		o.timer = newAlarm(o.emit)
	}
	o.timer.Reset(o.debounce)
}

func (o *openFiles) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	if o.timer != nil {
		o.timer.Stop()
	}
}

// context is the IdeContext for clients. OpenFiles is never nil: the real
// client disconnects on a null.
func (o *openFiles) context(trusted *bool) ide.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	files := make([]ide.File, len(o.files))
	for i, f := range o.files {
		if f.Cursor != nil {
			c := *f.Cursor
			f.Cursor = &c
		}
		files[i] = f
	}
	return ide.Context{WorkspaceState: &ide.WorkspaceState{OpenFiles: files, IsTrusted: trusted}}
}

// truncateSelection cuts s after ide.MaxSelectedTextLength characters,
// counted in UTF-16 code units as the client's JavaScript counts them, and
// marks the cut the way the client does (IdeContextStore.set in gemini-cli
// 0.61.0 packages/core/src/ide/ideContext.ts; the official companion also
// cuts, gemini-cli 0.61.0
// packages/vscode-ide-companion/src/open-files-manager.ts): far less to send,
// and the client's own cut of the result yields the same text. A surrogate
// pair is never split.
func truncateSelection(s string) string {
	if len(s) <= ide.MaxSelectedTextLength {
		return s // at most that many bytes, so at most that many code units
	}
	units := 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1
		}
		if units+n > ide.MaxSelectedTextLength {
			return s[:i] + ide.TruncatedSuffix
		}
		units += n
	}
	return s
}
