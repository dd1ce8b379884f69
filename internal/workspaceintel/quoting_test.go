package workspaceintel

import (
	"path/filepath"
	"testing"

	"github.com/gemkit/gemkit/internal/golden"
	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// TestQuotingGolden: the paths an answer never quotes, in an environment
// whose folders are all known (sandboxtest.Places), are what the golden
// file says: the folders closed to every sandboxed process, as the
// profiles close them.
func TestQuotingGolden(t *testing.T) {
	p := sandboxtest.NewPlaces(t)
	q := quoting(filepath.Join(p.Root, "ws"), nil, Config{Home: p.Getenv("HOME"), Getenv: p.Getenv})
	golden.Check(t, filepath.Join("testdata", "quoting.golden"), []byte(p.Text(struct{ Closed []string }{q.Closed()})))
}
