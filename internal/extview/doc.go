// Package extview is an installed extension as gemkit's commands show
// it, as data: a row of `gemkit extensions list`, the whole of `list
// --json`, `describe` and `install --json` (Item), with where its
// servers run and whether gemkit mcp serves them (internal/extswitch),
// and the person's consent to it (Consent). It reads; it says nothing:
// internal/cli turns an Item into words.
package extview
