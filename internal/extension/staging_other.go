//go:build !unix

package extension

// processAlive cannot ask about another process here without opening it,
// so every tagged staging folder counts as in use until it is stale.
func processAlive(pid int) bool { return true }

// sameFileSystem assumes the staging folder and the extensions folder,
// both under .gemini, share a file system.
func sameFileSystem(a, b string) bool { return true }
