package term

import (
	"bufio"
	"context"
	"errors"
	"io"
)

// ReadLine reads one line the person types on r (an answer to a
// question), giving up when ctx ends; the reading goroutine then ends
// with r.
func ReadLine(ctx context.Context, r io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if errors.Is(err, io.EOF) {
			err = nil
		}
		ch <- result{line, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case res := <-ch:
		return res.line, res.err
	}
}
