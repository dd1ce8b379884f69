// Package procmem keeps a long-running gemkit process's resident memory
// to what it uses.
//
// One gemkit binary holds every command, the model SDKs of `gemkit run`
// included, and Go initializes every linked package when the process
// starts, whichever command runs: that start-up touches pages of the
// executable (code, tables, descriptors) that a server such as
// `gemkit ide serve` never touches again, yet they stay in its resident
// set. [ReleaseStartupPages] gives them back once the server is up.
package procmem

// ReleaseStartupPages drops the pages of the running executable's
// read-only mappings from the process's resident set. The kernel keeps
// them in the page cache, and the pages the process goes on using come
// back on their next access (a minor fault, no disk read), so what stays
// resident is what the process really uses. Writable mappings are never
// touched. It returns the number of bytes of mappings advised; an error
// means nothing may have been released, which is harmless.
func ReleaseStartupPages() (int64, error) { return releaseStartupPages() }
