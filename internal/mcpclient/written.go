package mcpclient

import "context"

// writtenKey is the context key of WithWritten's function.
type writtenKey struct{}

// WithWritten returns ctx for a request whose caller wants to hear when
// the request has gone to the server: a direct call on stdio (CallToolRaw)
// calls written once its line is on the server's stdin (or its write
// failed). Elsewhere that moment is the SDK's, and written is not called:
// the caller takes the request's return for it. A server answers in the
// order it reads, so that a caller can keep a request of its own (a
// listing) behind one it lets go first.
func WithWritten(ctx context.Context, written func()) context.Context {
	return context.WithValue(ctx, writtenKey{}, written)
}

// wrote calls ctx's WithWritten function, if any.
func wrote(ctx context.Context) {
	if f, ok := ctx.Value(writtenKey{}).(func()); ok {
		f()
	}
}
