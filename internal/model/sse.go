package model

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// maxEvent bounds one server-sent event's data: a reply streams in many
// small events, so an event this large is a broken or hostile endpoint,
// not a long answer.
const maxEvent = 16 << 20

// readSSE calls fn with the data of each event of a text/event-stream
// body (the "data:" lines of one event joined by newlines), in order,
// until the body ends or fn fails. Comments (keep-alives such as ": ping"
// and ": OPENROUTER PROCESSING", however many), event names and ids are
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
			switch string(field) {
			case "data":
				if has {
					data = append(data, '\n')
				}
				data = append(data, value...)
				has = true
			case "error":
				// llama.cpp's server of 2025 sends a failure after its 200 as
				// a field of its own, `error: {"code": 400, "message": …}`
				// (ggml-org/llama.cpp#14566): it becomes the event
				// {"error": …}, as later builds send it.
				data = append(append(append(data[:0], `{"error":`...), value...), '}')
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

// DefaultIdleTimeout is how long a model request may go without a byte
// from the server: Node's fetch, which Gemini CLI uses, gives up on a
// silent response after 300 s (undici's headersTimeout and bodyTimeout).
const DefaultIdleTimeout = 300 * time.Second

// errIdle is the cause of a request ended by its idle timer.
var errIdle = errors.New("idle")

// idleWatch cancels a request once its server has been silent for its
// timeout; each byte read restarts the timer. A keep-alive comment is
// bytes, so a server that pings is never idle.
type idleWatch struct {
	d      time.Duration
	t      *time.Timer
	cancel context.CancelCauseFunc
}

func withIdle(ctx context.Context, d time.Duration) (context.Context, *idleWatch) {
	if d <= 0 {
		d = DefaultIdleTimeout
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &idleWatch{d: d, cancel: cancel}
	w.t = time.AfterFunc(d, func() { cancel(errIdle) })
	return ctx, w
}

// post sends a streaming request, payload to url with header, under an
// idle watch of idle. ctx is the request's context, for w.explain; the
// caller reads the body through w.body, then closes it and stops w. A
// failure to send is parent's error when parent ended (the person
// cancelled), else one classified for endpoint.
func post(parent context.Context, client *http.Client, url, endpoint string, header http.Header, payload []byte, idle time.Duration) (resp *http.Response, ctx context.Context, w *idleWatch, err error) {
	ctx, w = withIdle(parent, idle)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		w.stop()
		return nil, nil, nil, fmt.Errorf("the model request: %w", err)
	}
	hr.Header = header
	resp, err = client.Do(hr)
	if err != nil {
		if parent.Err() != nil {
			err = parent.Err()
		} else {
			err = w.explain(classify(0, err.Error(), endpoint, err, ""), ctx)
		}
		w.stop()
		return nil, nil, nil, err
	}
	return resp, ctx, w, nil
}

func (w *idleWatch) stop() {
	w.t.Stop()
	w.cancel(nil)
}

func (w *idleWatch) body(r io.Reader) io.Reader { return idleReader{r, w} }

// explain says so when e ended because the server went silent.
func (w *idleWatch) explain(e *Error, ctx context.Context) *Error {
	if context.Cause(ctx) == errIdle {
		e.Msg = fmt.Sprintf("the server sent nothing for %v", w.d)
		e.Hint = "The server may be overloaded or stuck; gemkit gives up on a silent server after this long, as Gemini CLI does"
	}
	return e
}

type idleReader struct {
	r io.Reader
	w *idleWatch
}

func (r idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.t.Reset(r.w.d)
	}
	return n, err
}
