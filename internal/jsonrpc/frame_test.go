package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// readAll returns what a reader makes of in: each message, skipped
// message (with its answer) and the end, one a line.
func readAll(f Framer, in string, max int) []string {
	fr := f.NewReader(strings.NewReader(in), max)
	var got []string
	for range 100 {
		body, err := fr.Next()
		var fe *FrameError
		switch {
		case err == nil:
			got = append(got, "msg "+string(body))
		case errors.As(err, &fe):
			s := "skip " + fe.Msg
			if fe.Answer != nil {
				s += " / " + fe.Answer.Message
			}
			got = append(got, s)
		default:
			return append(got, "end "+err.Error())
		}
	}
	return append(got, "no end")
}

func TestLineFramer(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lines", "{\"a\":1}\n{\"b\":2}\n", []string{`msg {"a":1}`, `msg {"b":2}`, "end EOF"}},
		{"blank and padded lines", "\n  \r\n {\"a\":1}\r\n\n", []string{`msg {"a":1}`, "end EOF"}},
		{"last line without newline", "{\"a\":1}\n{\"b\":2}", []string{`msg {"a":1}`, `msg {"b":2}`, "end EOF"}},
		{"too long, then fine", strings.Repeat("x", 30) + "\n{\"a\":1}\n", []string{"skip line longer than 20 bytes; skipped / Invalid Request: line longer than 20 bytes", `msg {"a":1}`, "end EOF"}},
		{"too long at the end", "{\"a\":1}\n" + strings.Repeat("x", 30), []string{`msg {"a":1}`, "skip line longer than 20 bytes; skipped / Invalid Request: line longer than 20 bytes", "end EOF"}},
		{"the newline counts", strings.Repeat("x", 20) + "\n", []string{"skip line longer than 20 bytes; skipped / Invalid Request: line longer than 20 bytes", "end EOF"}},
		{"empty", "", []string{"end EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readAll(LineFramer(), tt.in, 20); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	// A line longer than the read buffer, within the limit.
	long := `{"a":"` + strings.Repeat("y", 3*bufSize) + `"}`
	if got := readAll(LineFramer(), long+"\n", 4*bufSize); len(got) != 2 || got[0] != "msg "+long {
		t.Fatalf("long line: %.80q", got)
	}
	if got := string(LineFramer().Frame([]byte(`{}`))); got != "{}\n" {
		t.Fatalf("Frame = %q", got)
	}
}

func TestHeaderFramer(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"frames", "Content-Length: 7\r\n\r\n{\"a\":1}Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}", []string{`msg {"a":1}`, "msg {}", "end EOF"}},
		{"bare newlines, any case, blank lines between", "\r\n\ncontent-length:2\n\n{}", []string{"msg {}", "end EOF"}},
		{"empty body", "Content-Length: 0\r\n\r\n", []string{"msg ", "end EOF"}},
		{"no length", "Content-Type: x\r\n\r\nContent-Length: 2\r\n\r\n{}", []string{"skip malformed header: no Content-Length; frame skipped", "msg {}", "end EOF"}},
		{"not name: value", "Content-Length 2\r\n\r\nContent-Length: 2\r\n\r\n{}", []string{`skip malformed header: header line "Content-Length 2" is not "Name: value"; frame skipped`, "msg {}", "end EOF"}},
		{"bad length", "Content-Length: -1\r\n\r\n", []string{`skip malformed header: Content-Length "-1" is not a byte count; frame skipped`, "end EOF"}},
		{"too large, then fine", "Content-Length: 30\r\n\r\n" + strings.Repeat("x", 30) + "Content-Length: 2\r\n\r\n{}", []string{"skip message of 30 bytes is over the limit of 20 bytes; skipped / Invalid Request: message of 30 bytes is over the limit of 20 bytes", "msg {}", "end EOF"}},
		{"too large, cut short", "Content-Length: 30\r\n\r\nxx", []string{"end unexpected EOF"}},
		{"body cut short", "Content-Length: 7\r\n\r\n{}", []string{"end unexpected EOF"}},
		{"header cut short", "Content-Length: 7\r\n", []string{"end unexpected EOF"}},
		{"header line cut short", "Content-Len", []string{"end unexpected EOF"}},
		{"over-long header line", strings.Repeat("x", 3*maxHeaderLine) + "\r\n\r\nContent-Length: 2\r\n\r\n{}", []string{`skip malformed header: header line "` + strings.Repeat("x", 60) + `…" is not "Name: value"; frame skipped`, "msg {}", "end EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readAll(HeaderFramer(), tt.in, 20); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	if got := string(HeaderFramer().Frame([]byte(`{"a":1}`))); got != "Content-Length: 7\r\n\r\n{\"a\":1}" {
		t.Fatalf("Frame = %q", got)
	}
}

// FuzzFramers: whatever the bytes, a reader returns no message over its
// limit, never more messages than the input could hold, and comes to an
// end; what a framer frames, its reader reads back.
func FuzzFramers(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}\n{\"a\":1}\n"), []byte(`{"x":"y"}`))
	f.Add([]byte("Content-Length: 99999999999999999999\r\n\r\n"), []byte(""))
	f.Add([]byte("\n\n\r\n"), []byte(" "))
	const max = 64
	f.Fuzz(func(t *testing.T, in, body []byte) {
		for _, fr := range []Framer{LineFramer(), HeaderFramer()} {
			r := fr.NewReader(bytes.NewReader(in), max)
			for n := 0; ; n++ {
				if n > len(in)+1 {
					t.Fatalf("%T: more messages than bytes in %q", fr, in)
				}
				msg, err := r.Next()
				var fe *FrameError
				if errors.As(err, &fe) {
					continue
				}
				if err != nil {
					break
				}
				if len(msg) > max {
					t.Fatalf("%T: a message of %d bytes over the limit of %d", fr, len(msg), max)
				}
			}
			if len(body) == 0 || len(body) > max || bytes.ContainsAny(body, "\r\n") || len(bytes.TrimSpace(body)) != len(body) {
				continue // not one message of every framing
			}
			r = fr.NewReader(bytes.NewReader(fr.Frame(bytes.Clone(body))), max)
			if got, err := r.Next(); err != nil || !bytes.Equal(got, body) {
				t.Fatalf("%T: framed %q, read back %q, %v", fr, body, got, err)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Fatalf("%T: after the one message: %v", fr, err)
			}
		}
	})
}
