//go:build !linux

package cli

import (
	"context"
	"errors"
	"time"

	"github.com/gemkit/gemkit/internal/exthook"
)

// warmServeFlag is the hidden flag of a hook's warm server, which only
// Linux has.
const warmServeFlag = "warm-serve"

// warmClient is never made here: every run is cold.
type warmClient struct{}

func warmHook(*app, *exthook.Hook) *warmClient { return nil }

func (*warmClient) run(context.Context) (int, string, error) { return 0, "", exthook.ErrNoWarm }

func (*warmClient) leave(string) {}

func serveWarmHook(context.Context, *app, *exthook.Hook, string, func(time.Time, exthook.Result)) error {
	return withExitCode(ExitNo, errors.New("warm hook servers run on Linux only"))
}
