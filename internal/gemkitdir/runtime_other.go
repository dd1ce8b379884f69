//go:build !unix

package gemkitdir

func checkPrivate(string) error { return nil }
