package term

import (
	"bytes"
	"io"
)

// BoldWriter shows a model's Markdown emphasis as a terminal does best:
// text between "**" markers is written bold (ANSI SGR 1) and the markers
// are dropped, so that a streamed reply does not show "**word**". It works
// across writes, as a reply arrives in pieces that may split a marker.
// Close ends bold text left open and writes a "*" still held back.
type BoldWriter struct {
	w       io.Writer
	bold    bool
	pending bool // a "*" that may start a marker
}

// NewBoldWriter writes to w.
func NewBoldWriter(w io.Writer) *BoldWriter { return &BoldWriter{w: w} }

func (b *BoldWriter) Write(p []byte) (int, error) {
	var out bytes.Buffer
	for _, c := range p {
		switch {
		case b.pending && c == '*':
			b.pending = false
			b.bold = !b.bold
			if b.bold {
				out.WriteString("\x1b[1m")
			} else {
				out.WriteString("\x1b[22m")
			}
		case b.pending:
			b.pending = false
			out.WriteByte('*')
			if c == '*' {
				b.pending = true
			} else {
				out.WriteByte(c)
			}
		case c == '*':
			b.pending = true
		default:
			out.WriteByte(c)
		}
	}
	if _, err := b.w.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close writes what is held back and ends bold text, at the end of a
// reply; the writer can be used again after it.
func (b *BoldWriter) Close() error {
	var out bytes.Buffer
	if b.pending {
		out.WriteByte('*')
		b.pending = false
	}
	if b.bold {
		out.WriteString("\x1b[22m")
		b.bold = false
	}
	_, err := b.w.Write(out.Bytes())
	return err
}
