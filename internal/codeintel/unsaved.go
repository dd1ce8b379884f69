package codeintel

import (
	"context"
	"time"
)

// Unsaved is implemented by a Source whose servers see some files with
// text that is not on disk yet: an editor's buffers with changes the
// person has not saved. The tools then show those files' lines from that
// text, so that an answer's source lines are the ones its positions count
// in (a function added but not saved is shown as it is in the buffer).
type Unsaved interface {
	// Unsaved returns the text of each such file, by absolute path.
	Unsaved(ctx context.Context) (map[string]string, error)
}

// unsavedTimeout bounds the question for unsaved texts: without an
// answer, lines come from the disk.
const unsavedTimeout = 2 * time.Second

// fileCache returns a cache of the files' lines for one answer, which
// takes the text of unsaved buffers from the Source when it knows any.
func (t *Tools) fileCache(ctx context.Context) *fileCache {
	fc := newFileCache(t.root, t.qt)
	if u, ok := t.src.(Unsaved); ok {
		fc.unsaved = func() map[string]string {
			ctx, cancel := context.WithTimeout(ctx, unsavedTimeout)
			defer cancel()
			texts, err := u.Unsaved(ctx)
			if err != nil {
				return nil
			}
			return texts
		}
	}
	return fc
}
