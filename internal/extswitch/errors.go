package extswitch

import "fmt"

// Refused is the switch saying no, in words with what to do: nothing was
// wrong with the request, but the extension, the host's settings or the
// person's consent stand in the way (a command exits 1 on it, a no, not
// an error).
type Refused struct{ Err error }

func (e *Refused) Error() string { return e.Err.Error() }
func (e *Refused) Unwrap() error { return e.Err }

// refuse is a Refused of the words format and args make.
func refuse(format string, args ...any) error {
	return &Refused{fmt.Errorf(format, args...)}
}
