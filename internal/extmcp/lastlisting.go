package extmcp

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/internal/disclosure"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// What gemkit mcp found of a server the last time it started and listed
// it is kept beside its catalog (kept.go): its catalog, or why it could
// not serve it (a start or a listing that failed). The switch, which
// lists the servers it switched as gemkit mcp does, and list, describe
// and doctor read it (LastListings): "served" is said of a server only
// as far as gemkit mcp served it, and one it could not serve is told
// with why. mcp-server-kubernetes 4.1.7 failed every listing, while the
// switch said "gemkit mcp serves it" and list and doctor said nothing.

// keptFailure is why gemkit mcp could not serve a server, and when.
type keptFailure struct {
	At  time.Time `json:"at"`
	Why string    `json:"why"`
}

// keepFailure keeps err, when it is a failure of the server's run (a
// start or a listing: runFailure), as the server's kept catalog, in the
// place of the catalog kept before: a server that cannot start is not
// answered from it. Other errors (no consent, no pin, gemkit mcp
// ending) are told by the checks of list and doctor themselves, or are
// none of the server's. The caller holds s.mu.
func (s *server) keepFailure(err error) {
	var rf *runFailure
	if !errors.As(err, &rf) {
		return
	}
	k := keptCatalog{Start: s.spec.fingerprint(), Tools: []keptTool{}, Failed: &keptFailure{At: time.Now().UTC().Truncate(time.Second), Why: rf.brief}}
	b, err := json.Marshal(k)
	if err == nil {
		var path string
		if path, err = s.keptPath(); err == nil {
			if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
				err = fsutil.WriteFileAtomic(path, append(b, '\n'), 0o600)
			}
		}
	}
	if err != nil {
		s.m.log.Debug("keeping why a server could not be served", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
	}
	// The next listing writes its catalog over it.
	s.cache.keptJSON = nil
}

// Listing is what gemkit mcp found of a server the last time it listed
// it, started as it is now.
type Listing struct {
	// Tools is how many tools it listed.
	Tools int `json:"tools"`
	// Failed is why gemkit mcp could not serve it, at At; "" when it
	// listed.
	Failed string    `json:"failed,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// LastListings are the last listings of the servers of ext, started as
// p starts them now (a pin or a widening since makes another start), by
// label (Spec.Label); a server not listed so since is absent.
func (p Policy) LastListings(ext *extension.Extension) map[string]Listing {
	dir, err := CatalogsPath(map[string]string{"HOME": p.Home})
	if err != nil {
		return nil
	}
	set := &disclosure.Set{Extensions: []*disclosure.Extension{{Name: ext.Manifest.Name, Ext: ext}}}
	specs, _ := Specs(set, p.Choose())
	out := map[string]Listing{}
	for _, sp := range specs {
		k, ok := readKeptFile(keptFile(dir, sp.Key()))
		if !ok || k.Start != sp.fingerprint() {
			continue
		}
		l := Listing{Tools: len(k.Tools)}
		if k.Failed != nil {
			l.Failed, l.At = Printable(k.Failed.Why), k.Failed.At
		}
		out[sp.Label()] = l
	}
	return out
}

// readKeptFile reads a kept catalog; ok is false when it cannot be read.
func readKeptFile(path string) (k keptCatalog, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return k, false
	}
	defer f.Close()
	return k, json.NewDecoder(io.LimitReader(f, maxKept)).Decode(&k) == nil
}
