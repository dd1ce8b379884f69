//go:build !linux

package cli

import (
	"context"
	"errors"
	"time"

	"github.com/gemkit/gemkit/internal/exthook"
	"github.com/spf13/cobra"
)

// warmServeFlag is the hidden flag of a hook's warm server, which only
// Linux has.
const warmServeFlag = "warm-serve"

// warmClient is never made here: every run is cold.
type warmClient struct{}

func warmHook(*app, *exthook.Hook) *warmClient { return nil }

func (*warmClient) leave(string) {}

func serveWarmHook(context.Context, *cobra.Command, *app, *loadedHook, string, string, string, func(time.Time, exthook.Result)) error {
	return withExitCode(ExitNo, errors.New("warm hook servers run on Linux only"))
}
