//go:build !linux

package exthook

import "errors"

// WarmSupported: warm sandboxes are Linux's only.
const WarmSupported = false

// ErrNoWarm: no warm sandbox took the run.
var ErrNoWarm = errors.New("no warm sandbox")
