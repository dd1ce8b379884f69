package agentread

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// nodeReader is testdata/agentparse.mjs, running: the agents' own
// JSON.parse and js-yaml, asked one text at a time.
type nodeReader struct {
	mu  sync.Mutex
	in  io.WriteCloser
	out *bufio.Reader
}

var (
	nodeOnce sync.Once
	node     *nodeReader
	nodeErr  error
)

// agents starts the reader once for the test binary.
func agents(t testing.TB) *nodeReader {
	t.Helper()
	bin, interop := gemkittest.Interop(t, "js-yaml/package.json")
	nodeOnce.Do(func() {
		script, err := filepath.Abs(filepath.Join("testdata", "agentparse.mjs"))
		if err != nil {
			nodeErr = err
			return
		}
		cmd := exec.Command(bin, script, interop)
		in, err := cmd.StdinPipe()
		if err != nil {
			nodeErr = err
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			nodeErr = err
			return
		}
		if nodeErr = cmd.Start(); nodeErr == nil {
			node = &nodeReader{in: in, out: bufio.NewReaderSize(out, 1<<20)}
		}
	})
	if nodeErr != nil {
		t.Fatalf("starting the agents' parsers: %v", nodeErr)
	}
	return node
}

// read asks the agents' parser of kind ("json", "yaml") for text: its
// canonical value, or ok false with its error.
func (r *nodeReader) read(t testing.TB, kind string, text []byte) (canon string, ok bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := fmt.Fprintf(r.in, "%s %d\n%s", kind, len(text), text); err != nil {
		t.Fatal(err)
	}
	line, err := r.out.ReadString('\n')
	if err != nil {
		t.Fatalf("the agents' parser: %v", err)
	}
	line = strings.TrimSuffix(line, "\n")
	if rest, found := strings.CutPrefix(line, "ok "); found {
		return rest, true
	}
	return strings.TrimPrefix(line, "err "), false
}

// canon writes v as agentparse.mjs writes the agents' values.
func canon(v Value) string {
	var b strings.Builder
	writeCanon(&b, v)
	return b.String()
}

func writeCanon(b *strings.Builder, v Value) {
	switch v.kind {
	case Null:
		b.WriteString("null")
	case Undefined:
		b.WriteString("undefined")
	case Bool:
		fmt.Fprint(b, v.b)
	case Number:
		if math.IsNaN(v.n) {
			b.WriteString("n:NaN")
		} else if v.n == 0 && 1/v.n < 0 {
			b.WriteString("n:-0")
		} else {
			b.WriteString("n:" + NumberString(v.n))
		}
	case String:
		b.WriteString("s:" + hex.EncodeToString([]byte(v.s)))
	case Array:
		b.WriteByte('[')
		for i, e := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, e)
		}
		b.WriteByte(']')
	case Object:
		b.WriteByte('{')
		for i, k := range v.obj.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("s:" + hex.EncodeToString([]byte(k)) + ":")
			writeCanon(b, v.obj.vals[k])
		}
		b.WriteByte('}')
	}
}

// agree fails t unless gemkit's reading of text agrees with the agent's:
// the same value, or both refusing it; gemkit may also find it
// unreadable (and hold what it belongs to), never read it otherwise.
func agree(t *testing.T, kind string, text []byte, read func([]byte) (Value, error)) {
	t.Helper()
	want, agentOK := agents(t).read(t, kind, text)
	got, err := read(text)
	switch {
	case IsUnreadable(err):
		return
	case err != nil && agentOK:
		t.Fatalf("%s %q: gemkit refuses it (%v); the agent reads %s", kind, text, err, want)
	case err == nil && !agentOK:
		t.Fatalf("%s %q: gemkit reads %s; the agent refuses it (%s)", kind, text, canon(got), want)
	case err == nil && canon(got) != want:
		t.Fatalf("%s %q:\ngemkit reads %s\nthe agent   %s", kind, text, canon(got), want)
	}
}
