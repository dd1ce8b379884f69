package extmcp

import (
	"regexp"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/causeline"
	"github.com/gemkit/gemkit/internal/extension"
)

// tailBytes is how much of a server's stderr is kept for its errors.
const tailBytes = 2048

// tail keeps the last tailBytes a server wrote on stderr, and the line
// of all it wrote that says why it failed (causeline): a stack's last
// lines are frames, which the end alone would quote.
type tail struct {
	mu    sync.Mutex
	buf   []byte
	cause causeline.Finder
}

func (t *tail) Write(p []byte) (int, error) {
	t.cause.Write(p)
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
	t.cause.Reset()
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}

// frame is a line of a stack that a person cannot act on: a frame of
// Node's ("at Module.load (node:internal/...)"), a frame of Python's,
// Node's footer ("Node.js v20.20.2").
var frame = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s+at \S|\s+File "|Node\.js v\d)`) })

// String is the kept text, its last few lines but the stack's frames,
// fit to print.
func (t *tail) String() string {
	t.mu.Lock()
	s := string(t.buf)
	t.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" && !frame().MatchString(l) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return extension.PrintableText(strings.Join(lines, "\n"))
}

// Cause is the line of what the server printed that says why it
// failed, fit to print; "" when none reads so.
func (t *tail) Cause() string { return Printable(t.cause.Cause()) }

// stderrWords say what the server printed on stderr, for the words of
// a failure, after what happened: the cause first, then the end of it;
// end names that end ("the end of what it printed on stderr").
func (t *tail) stderrWords(end string) string {
	s := t.String()
	if s == "" {
		return ""
	}
	words := "; " + end + ":\n" + s
	if c := t.Cause(); c != "" {
		words = "; it said: " + c + words
	}
	return words
}
