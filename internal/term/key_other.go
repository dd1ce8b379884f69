//go:build !linux

package term

// singleKeyMode is not supported here: answers are read a line at a time.
func singleKeyMode(any) (func(), bool) { return nil, false }

// KeyMode is singleKeyMode for other packages: not supported here.
func KeyMode(in any) (func(), bool) { return singleKeyMode(in) }

// discardTypeAhead is not needed here: with no key mode, no question is
// asked by key on a terminal.
func discardTypeAhead(any) {}
