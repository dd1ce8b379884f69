//go:build !unix

package lspbroker

import (
	"context"
	"errors"
)

// Supported reports whether this system runs brokers; elsewhere each
// process runs its own servers.
const Supported = false

// Ready is what a broker writes on its standard output once it listens.
const Ready = "ready"

// Command starts a broker (not on this system).
type Command struct {
	Path string
	Args []string
	Env  []string
	Log  string
}

var errUnsupported = errors.New("code intelligence brokers need Unix sockets")

// Start fails: no broker runs on this system.
func (Command) Start(context.Context) error { return errUnsupported }

func lockFile(string) (func(), error) { return nil, errUnsupported }
