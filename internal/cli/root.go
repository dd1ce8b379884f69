// Package cli builds gemkit's command tree. Each command lives in a small
// file of its own: flags in, one package call, output out.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command. Commands that decide between a yes
// and a no (ide diff: accepted or rejected) use ExitNo for the no.
const (
	ExitOK    = 0
	ExitNo    = 1
	ExitError = 2
)

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withExitCode makes a command end with code; err may be nil when the
// command already said everything it had to say.
func withExitCode(code int, err error) error { return &exitError{code: code, err: err} }

// Streams are the standard streams a command uses; tests swap them.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Main runs gemkit with args and returns the process exit code.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Run runs gemkit with args on the given streams and returns the exit code.
func Run(ctx context.Context, args []string, s Streams) int {
	root := NewRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(s.Err, "gemkit:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(s.Err, "gemkit:", err)
	return ExitError
}

// NewRoot builds the whole command tree writing to s.
func NewRoot(s Streams) *cobra.Command {
	var verbose bool
	root := &cobra.Command{
		Use:           "gemkit",
		Short:         "Gemini CLI IDE companion, client and extension manager",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(s.Err, &slog.HandlerOptions{Level: level})))
		},
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log debug messages to stderr")
	root.AddCommand(newIDECmd(s), newExtensionsCmd(s), newMCPCmd(s), newRunCmd(s), newChatCmd(s))
	return root
}
