package lspserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gemkit/gemkit/companion"
	"github.com/gemkit/gemkit/companion/editorproto"
	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// selectionTimer notes when each cursor report reaches the companion.
type selectionTimer struct {
	recorder
	at chan time.Time
}

func (s *selectionTimer) Selection(string, ide.Cursor, string) { s.at <- time.Now() }

// editorAdapter is one front-end under measure: stdio (the editor
// protocol, what the Neovim plugin speaks) or lsp.
type editorAdapter struct {
	// start runs the adapter on the pipes and returns its Editor.
	start func(b *testing.B, in io.Reader, out io.Writer, ev companion.Events) companion.Editor
	// cursor is one cursor report, as the editor writes it.
	cursor func(path string, line int) []byte
	// answer reads the adapter's request to show a diff from r and
	// answers it on w.
	answer func(r *bufio.Reader, w io.Writer) error
}

var adapters = map[string]editorAdapter{
	"stdio": {
		start: func(b *testing.B, in io.Reader, out io.Writer, ev companion.Events) companion.Editor {
			c := editorproto.New(in, out, editorproto.Options{Logger: slog.New(slog.DiscardHandler)})
			go c.Run(b.Context(), ev)
			return c
		},
		cursor: func(path string, line int) []byte {
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"editor/selection","params":{"path":%q,"cursor":{"line":%d,"character":1}}}`+"\n", path, line)
		},
		answer: func(r *bufio.Reader, w io.Writer) error {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return err
			}
			var m struct{ ID int }
			if err := json.Unmarshal(line, &m); err != nil {
				return err
			}
			_, err = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{}}`+"\n", m.ID)
			return err
		},
	},
	"lsp": {
		start: func(b *testing.B, in io.Reader, out io.Writer, ev companion.Events) companion.Editor {
			s := New(in, out, Options{Logger: slog.New(slog.DiscardHandler)})
			go s.Run(b.Context(), func(Init) (companion.Events, error) { return ev, nil })
			return s
		},
		cursor: func(path string, line int) []byte {
			return frame(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"textDocument/documentHighlight","params":{"textDocument":{"uri":%q},"position":{"line":%d,"character":0}}}`, line, uriOf(path), line))
		},
		answer: func(r *bufio.Reader, w io.Writer) error {
			fr := jsonrpc.HeaderFramer().NewReader(r, 1<<30) // r itself: a bufio.Reader of the same size
			for {
				body, err := fr.Next()
				if err != nil {
					return err
				}
				var m struct {
					ID     *int
					Method string
				}
				if err := json.Unmarshal(body, &m); err != nil {
					return err
				}
				if m.Method == "workspace/applyEdit" {
					_, err = w.Write(frame(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"applied":true}}`, *m.ID)))
					return err
				}
			}
		},
	},
}

// pipes connects an adapter to the benchmark's editor side.
type pipes struct {
	editorW   *os.File      // the editor's writes: the adapter's stdin
	editorR   *bufio.Reader // the adapter's stdout
	adapterIn *os.File
}

func newPipes(b *testing.B) (p pipes, adapterOut *os.File) {
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { inR.Close(); inW.Close(); outR.Close(); outW.Close() })
	return pipes{editorW: inW, editorR: bufio.NewReaderSize(outR, 64<<10), adapterIn: inR}, outW
}

// BenchmarkCursorDelivery measures a cursor report from the write of the
// editor's message into a real pipe to the companion's Selection call, for
// the stdio editor protocol and for LSP in the same run: the part of
// "editor event → ide/contextUpdate" that differs between the two (the
// companion's debounce and delivery are the same code).
func BenchmarkCursorDelivery(b *testing.B) {
	for _, name := range []string{"stdio", "lsp"} {
		a := adapters[name]
		b.Run(name, func(b *testing.B) {
			p, out := newPipes(b)
			ev := &selectionTimer{at: make(chan time.Time, 1)}
			a.start(b, p.adapterIn, out, ev)
			path := filepath.Join(b.TempDir(), "f.go")
			if name == "lsp" {
				p.editorW.Write(frame([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"workspace":{"applyEdit":true}}}}`)))
				go io.Copy(io.Discard, p.editorR) // answers to the requests
			}
			var lat []time.Duration
			n := 0
			for b.Loop() {
				n++
				msg := a.cursor(path, n)
				// A sleep: the idle time between keystrokes is what is
				// measured after.
				time.Sleep(2 * time.Millisecond)
				start := time.Now()
				if _, err := p.editorW.Write(msg); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, (<-ev.at).Sub(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
		})
	}
}

// BenchmarkDiffShown measures the companion's OpenDiff until the editor
// has the proposal and has answered (stdio: diff/open; lsp: the
// applyEdit of the proposal into the buffer), same run.
func BenchmarkDiffShown(b *testing.B) {
	for _, name := range []string{"stdio", "lsp"} {
		a := adapters[name]
		b.Run(name, func(b *testing.B) {
			p, out := newPipes(b)
			ed := a.start(b, p.adapterIn, out, newRecorder())
			ws := b.TempDir()
			path := filepath.Join(ws, "f.go")
			if err := os.WriteFile(path, []byte("package f\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			if name == "lsp" {
				p.editorW.Write(frame([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{"workspace":{"applyEdit":true}}}}`)))
				if _, err := jsonrpc.HeaderFramer().NewReader(p.editorR, 1<<30).Next(); err != nil {
					b.Fatal(err)
				}
			}
			errs := make(chan error, 1)
			var lat []time.Duration
			n := 0
			for b.Loop() {
				n++
				go func() { errs <- a.answer(p.editorR, p.editorW) }()
				start := time.Now()
				if err := ed.OpenDiff(context.Background(), path, fmt.Sprintf("package f\n\nvar x = %d\n", n)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
		})
	}
}
