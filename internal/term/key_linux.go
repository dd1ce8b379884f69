package term

import (
	"os"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// singleKeyMode puts the terminal in in into a mode that delivers each key
// at once, without echo and without waiting for Enter, and returns the
// function that puts it back. Output processing and the signal keys stay
// as they were, so Ctrl-C still interrupts and "\n" still starts a line.
// ok is false when in is not a terminal.
func singleKeyMode(in any) (restore func(), ok bool) {
	f, isFile := in.(*os.File)
	if !isFile || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	fd := int(f.Fd())
	saved, err := term.GetState(fd)
	if err != nil {
		return nil, false
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, false
	}
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return nil, false
	}
	return func() { _ = term.Restore(fd, saved) }, true
}

// KeyMode is singleKeyMode for other packages: the chat's line editor
// (x/term's Terminal) reads keys in it, with Ctrl-C still a signal.
func KeyMode(in any) (restore func(), ok bool) { return singleKeyMode(in) }

// discardTypeAhead drops what was typed on the terminal in but not read
// yet, so that a question is answered only by keys pressed after it.
func discardTypeAhead(in any) {
	if f, ok := in.(*os.File); ok {
		_ = unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH)
	}
}
