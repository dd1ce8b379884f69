//go:build !unix

package client

import "io"

// exitEndsReads says that the companion's exit may not end a read of its
// pipes here: closing a pipe need not wake a read under way, and a
// child of the companion may keep it open. The dial then ends its
// initialize at the exit itself.
const exitEndsReads = false

// drain ends the reads: without raw reads the pipe is closed at the
// companion's exit (companionExited), and what it held is lost.
func (p *exitPipe) drain([]byte) (int, error) { return 0, io.EOF }
