package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A Framer delimits messages on a byte stream.
type Framer interface {
	// NewReader reads the messages of r, none longer than max bytes.
	NewReader(r io.Reader, max int) FrameReader
	// Frame returns body framed, ready to write; it may reuse body's
	// array.
	Frame(body []byte) []byte
}

// A FrameReader returns one message's bytes at a time.
type FrameReader interface {
	// Next returns the next message, valid until the following call. A
	// *FrameError is a message skipped, and the next may be fine; io.EOF
	// is the end of the stream between messages, io.ErrUnexpectedEOF
	// inside one; any other error ends the stream.
	Next() ([]byte, error)
}

// FrameError is a message the reader skipped: too long, or with a header
// that cannot be read.
type FrameError struct {
	// Msg says what was wrong, for the log.
	Msg string
	// Answer, when not nil, is sent back (with a null id, since the
	// message was not read): the peer's request would otherwise wait.
	Answer *Error
}

func (e *FrameError) Error() string { return e.Msg }

// bufSize is the read buffer of both framings: a typical editor event is
// a few hundred bytes, a diff's content can be megabytes.
const bufSize = 64 << 10

// LineFramer frames one message a line, ended by "\n" (the stdio editor
// protocol, MCP's stdio transport). Blank lines are skipped, a last line
// without its "\n" still counts, and a line over the limit is read to its
// end, answered with Invalid Request and skipped.
func LineFramer() Framer { return lineFramer{} }

type lineFramer struct{}

func (lineFramer) NewReader(r io.Reader, max int) FrameReader {
	return &lineReader{br: bufio.NewReaderSize(r, bufSize), max: max}
}

func (lineFramer) Frame(body []byte) []byte { return append(body, '\n') }

type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
	err error // the end of the stream, reported once the last line is out
}

func (l *lineReader) Next() ([]byte, error) {
	for l.err == nil {
		l.buf = l.buf[:0]
		tooLong := false
		for {
			chunk, err := l.br.ReadSlice('\n')
			if !tooLong {
				if len(l.buf)+len(chunk) > l.max {
					tooLong = true
					l.buf = l.buf[:0]
				} else {
					l.buf = append(l.buf, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			l.err = err // nil at the end of a line
			break
		}
		if tooLong {
			return nil, &FrameError{
				Msg:    "line longer than " + strconv.Itoa(l.max) + " bytes; skipped",
				Answer: &Error{Code: CodeInvalidRequest, Message: "Invalid Request: line longer than " + strconv.Itoa(l.max) + " bytes"},
			}
		}
		if line := bytes.TrimSpace(l.buf); len(line) > 0 {
			return line, nil
		}
	}
	return nil, l.err
}

// HeaderFramer frames each message as the Language Server Protocol's base
// protocol does (3.17, "Base Protocol"): "Name: value\r\n" header lines,
// an empty line, then exactly Content-Length bytes. A header that cannot
// be read is skipped with its frame (and logged: with no length there is
// nothing to answer); a frame over the limit is skipped and answered with
// Invalid Request. Blank lines between frames, and lines ended by a bare
// "\n" (some clients' test harnesses), are tolerated.
func HeaderFramer() Framer { return headerFramer{} }

type headerFramer struct{}

func (headerFramer) NewReader(r io.Reader, max int) FrameReader {
	return &headerReader{br: bufio.NewReaderSize(r, bufSize), max: max}
}

func (headerFramer) Frame(body []byte) []byte {
	out := make([]byte, 0, len(body)+32)
	out = append(out, "Content-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	return append(out, body...)
}

// maxHeaderLine bounds one header line; real clients send two short ones.
const maxHeaderLine = 1 << 10

type headerReader struct {
	br  *bufio.Reader
	max int
}

func (f *headerReader) Next() ([]byte, error) {
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
		return nil, &FrameError{Msg: "malformed header: " + bad + "; frame skipped"}
	}
	if length < 0 {
		return nil, &FrameError{Msg: "malformed header: no Content-Length; frame skipped"}
	}
	if length > f.max {
		if _, err := io.CopyN(io.Discard, f.br, int64(length)); err != nil {
			return nil, io.ErrUnexpectedEOF
		}
		tooLarge := fmt.Sprintf("message of %d bytes is over the limit of %d bytes", length, f.max)
		return nil, &FrameError{
			Msg:    tooLarge + "; skipped",
			Answer: &Error{Code: CodeInvalidRequest, Message: "Invalid Request: " + tooLarge},
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(f.br, body); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return body, nil
}

// readLine reads one header line without its line ending ("\r\n", or a
// bare "\n"). An over-long line is read to its end and cut, so that it
// shows as a bad header.
func (f *headerReader) readLine() (string, error) {
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
