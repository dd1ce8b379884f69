//go:build !unix

package mcpserver

import "io"

// pollable returns in as it is: only a unix descriptor is switched to
// the poller.
func pollable(in io.Reader) (io.Reader, func()) { return in, func() {} }

// pollableWriter returns out as it is.
func pollableWriter(out io.Writer) (io.Writer, func()) { return out, func() {} }
