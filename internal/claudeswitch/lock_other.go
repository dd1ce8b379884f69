//go:build !unix

package claudeswitch

// lock is lock_unix.go's; where there is no flock, Claude Code's plugins
// are not switched by two gemkit processes at once in practice (the
// sandbox they switch to is Linux's).
func (s *Switch) lock() (func(), error) { return func() {}, nil }
