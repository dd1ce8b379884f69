package extmcp

import (
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/extension"
)

// tailBytes is how much of a server's stderr is kept for its errors.
const tailBytes = 2048

// tail keeps the last tailBytes a server wrote on stderr.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// Reset forgets what was written.
func (t *tail) Reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

// String is the kept text, its last few lines, fit to print.
func (t *tail) String() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return extension.PrintableText(strings.Join(lines, "\n"))
}
