package term

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	xterm "golang.org/x/term"
)

// ReadSecret reads one secret the person types or pipes in (an API key):
// unechoed from a terminal, else the first line of in, read to at most
// 4 KiB so that a stream with no line break cannot hold gemkit.
func ReadSecret(in io.Reader) (string, error) {
	if f, ok := in.(*os.File); ok && xterm.IsTerminal(int(f.Fd())) {
		b, err := xterm.ReadPassword(int(f.Fd()))
		if err != nil {
			return "", fmt.Errorf("read the key: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the key: %w", err)
	}
	if key := strings.TrimSpace(line); key != "" {
		return key, nil
	}
	return "", errors.New("no key given: paste the key and press Enter")
}
