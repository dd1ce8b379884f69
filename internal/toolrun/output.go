package toolrun

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
)

func stderrTail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return ": " + s
}

func firstBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// capWriter keeps at most max bytes and calls onFull once when more come;
// printed, when not nil, counts every byte written, kept or not.
type capWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int64
	full    bool
	onFull  func()
	printed *atomic.Int64
}

type printedKey struct{}

// WithPrinted returns a context under which Run counts in n the bytes a
// tool prints (stdout and stderr) as it prints them, so that a caller can
// report the progress of a long call while it runs.
func WithPrinted(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, printedKey{}, n)
}

func printedCounter(ctx context.Context) *atomic.Int64 {
	n, _ := ctx.Value(printedKey{}).(*atomic.Int64)
	return n
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.printed != nil {
		w.printed.Add(int64(len(p)))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - int64(w.buf.Len())
	if int64(len(p)) > room {
		if room > 0 {
			w.buf.Write(p[:room])
		}
		if !w.full {
			w.full = true
			if w.onFull != nil {
				go w.onFull()
			}
		}
		return len(p), nil // keep draining so the tool is not blocked before the kill
	}
	w.buf.Write(p)
	return len(p), nil
}

// isFull reports whether more than max bytes were written.
func (w *capWriter) isFull() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.full
}

func (w *capWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

func (w *capWriter) String() string { return string(w.Bytes()) }
