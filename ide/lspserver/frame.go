package lspserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The base protocol's framing (LSP 3.17 "Base Protocol"): a header block of
// "Name: value\r\n" lines ended by an empty line, then exactly
// Content-Length bytes of JSON. It is written here rather than taken from a
// library because the framings the Go module proxy offers either close the
// connection on the first body that is not JSON (github.com/sourcegraph/
// jsonrpc2's VSCodeObjectCodec) or come with an unmaintained protocol
// package (go.lsp.dev, last released 2022); a language server attached to
// every file of an editor must answer a bad message and read on.

// maxHeaderLine bounds one header line; real clients send two short ones.
const maxHeaderLine = 1 << 10

// frameError is a header block that cannot be read as a frame; the reader
// has skipped it and the next block may be fine.
type frameError struct{ msg string }

func (e *frameError) Error() string { return e.msg }

// tooLargeError is a frame whose body is over the limit; its body has been
// skipped.
type tooLargeError struct{ length, limit int }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("message of %d bytes is over the limit of %d bytes", e.length, e.limit)
}

// frameReader reads framed bodies.
type frameReader struct {
	br  *bufio.Reader
	max int
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next body. A *frameError or *tooLargeError leaves the
// reader at the next header block; any other error ends the stream (io.EOF
// when it ended between frames).
func (f *frameReader) next() ([]byte, error) {
	length := -1
	var bad string
	lines := 0
	for {
		line, err := f.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && lines > 0 {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if line == "" {
			if lines == 0 {
				continue // blank lines between frames: tolerated
			}
			break
		}
		lines++
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			if bad == "" {
				bad = fmt.Sprintf("header line %q is not \"Name: value\"", clip(line))
			}
			continue
		}
		switch {
		case strings.EqualFold(strings.TrimSpace(name), "Content-Length"):
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				if bad == "" {
					bad = fmt.Sprintf("Content-Length %q is not a byte count", clip(strings.TrimSpace(value)))
				}
				continue
			}
			length = n
		case strings.EqualFold(strings.TrimSpace(name), "Content-Type"):
			// Only the default (application/vscode-jsonrpc; charset=utf-8)
			// exists in practice; the body is checked as UTF-8 anyway.
		}
	}
	if bad != "" {
		return nil, &frameError{msg: "malformed header: " + bad + "; frame skipped"}
	}
	if length < 0 {
		return nil, &frameError{msg: "malformed header: no Content-Length; frame skipped"}
	}
	if length > f.max {
		if _, err := io.CopyN(io.Discard, f.br, int64(length)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, &tooLargeError{length: length, limit: f.max}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(f.br, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

// readLine reads one header line without its line ending ("\r\n", or a
// bare "\n" that some clients' test harnesses send). An over-long line is
// read to its end and reported as a bad header.
func (f *frameReader) readLine() (string, error) {
	var buf []byte
	for {
		chunk, err := f.br.ReadSlice('\n')
		if len(buf) <= maxHeaderLine {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(buf) > 0 && errors.Is(err, io.EOF) {
				return "", io.ErrUnexpectedEOF
			}
			return "", err
		}
		break
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	return string(buf), nil
}

// clip shortens what a log line quotes of bad input.
func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// frame returns body with its header.
func frame(body []byte) []byte {
	out := make([]byte, 0, len(body)+32)
	out = append(out, "Content-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	return append(out, body...)
}
