package langserver

import (
	"fmt"
	"io"
	"io/fs"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// readLimited reads p, at most limit bytes, without blocking on a FIFO:
// through the workspace's root when p is in the workspace ws, so that no
// link (of p or of a folder above it) leads the read out of it, which a
// model may have made; else as a file of the person's, above the
// workspace (rustup's settings, a rust-toolchain file in a parent
// folder), whose final link is followed as the person's tools follow it.
func readLimited(ws, p string, limit int64) ([]byte, error) {
	if ws != "" && fsutil.Within(ws, p) {
		root, err := fsutil.OpenRoot(ws)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		rel, err := root.Rel(p)
		if err != nil {
			return nil, err
		}
		return root.ReadFile(rel, limit)
	}
	f, err := fsutil.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("larger than %d bytes", limit)}
	}
	return b, err
}
