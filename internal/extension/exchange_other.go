//go:build !linux

package extension

// exchange has no one-step form outside Linux; the caller falls back to
// two renames.
func exchange(a, b string) error { return errNoExchange }
