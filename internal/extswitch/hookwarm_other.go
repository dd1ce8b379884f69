//go:build !linux

package extswitch

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gemkit/gemkit/internal/exthook"
)

// WarmClient is never made here: every run is cold.
type WarmClient struct{}

// Warm is nil: warm sandboxes are Linux's.
func Warm(*exthook.Hook, string, []string, *slog.Logger) *WarmClient { return nil }

func (*WarmClient) Key() string { return "" }

func (*WarmClient) Leave(string, ...string) {}

// WarmServer serves nothing here.
type WarmServer struct {
	Hook   *LoadedHook
	Args   []string
	Key    string
	Reload func() (*LoadedHook, error)
	Log    *slog.Logger
	Done   func(time.Time, exthook.Result)
	Held   func() error
}

func (*WarmServer) Serve(context.Context) error {
	return errors.New("warm hook servers run on Linux only")
}
