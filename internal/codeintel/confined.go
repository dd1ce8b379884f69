package codeintel

import "context"

// Confined is a Source whose language servers run in gemkit's sandbox,
// in a profile that opens only what an answer may quote (the workspace
// and the servers' read-only folders) and never a closed path: what such
// a server says was read from those files alone. gemkit's own servers
// (internal/lspsource's Source when no editor answers) are; an editor's language
// clients, which run with the editor's rights, are not.
type Confined interface {
	// Confined reports whether the answer to a question asked now comes
	// from confined servers (an editor may start or quit meanwhile).
	Confined(ctx context.Context) bool
}

// confined reports whether src's answer to the question asked now comes
// from confined servers.
func confined(ctx context.Context, src Source) bool {
	s, ok := src.(Confined)
	return ok && s.Confined(ctx)
}
