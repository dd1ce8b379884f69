//go:build !linux

package exthook

import "errors"

// ErrNoWarm: no warm sandbox took the run.
var ErrNoWarm = errors.New("no warm sandbox")
