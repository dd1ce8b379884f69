package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEvent bounds one server-sent event's data: a reply streams in many
// small events, so an event this large is a broken or hostile endpoint,
// not a long answer.
const maxEvent = 16 << 20

// readSSE calls fn with the data of each event of a text/event-stream
// body (the "data:" lines of one event joined by newlines), in order,
// until the body ends or fn fails. Comments, event names and ids are
// skipped: the model APIs carry everything in the data.
func readSSE(body io.Reader, fn func(data []byte) error) error {
	r := bufio.NewReaderSize(body, 64<<10)
	var data []byte
	has := false
	flush := func() error {
		if !has {
			return nil
		}
		d := data
		data, has = data[:0], false
		return fn(d)
	}
	for {
		line, err := readLine(r, maxEvent-len(data))
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(line) == 0 {
					return flush()
				}
			} else {
				return err
			}
		}
		switch {
		case len(line) == 0:
			if ferr := flush(); ferr != nil {
				return ferr
			}
		case line[0] == ':':
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if string(field) == "data" {
				if has {
					data = append(data, '\n')
				}
				data = append(data, value...)
				has = true
			}
		}
		if errors.Is(err, io.EOF) {
			return flush()
		}
	}
}

// readLine reads one line without its end (\n or \r\n), refusing
// a line longer than limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+2 {
			return nil, fmt.Errorf("the model's stream sent an event over %d MiB", maxEvent>>20)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, err
	}
}
