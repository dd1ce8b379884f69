package extmcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// What a server listed the last time gemkit listed it is kept (a file
// per server in CatalogsPath), by the fingerprint of what starts it, as
// what it declared is (completions.go). A gemkit mcp that has not
// started the server yet answers a client's first list from there, once
// the person's consent to the extension as it is now is checked, and
// starts the server behind the answer: its own listing then confirms
// the kept one, or replaces it and tells the clients (list_changed), or,
// when the server cannot start, takes its entries away and the next
// listing reports why. A client that gives slow servers little time
// gets their tools all the same: Codex lists an optional server's tools
// for a turn only if they come within a second (openai/codex#31641),
// and a server in the sandbox takes longer to start than that on a
// loaded machine.

// maxKept bounds the size of a kept catalog that is read back.
const maxKept = 16 << 20

// keptCatalog is a server's catalog as kept, without its Spec.
type keptCatalog struct {
	// Start is the fingerprint of what started it (Spec.fingerprint).
	Start     string           `json:"start"`
	Tools     []mcpclient.Tool `json:"tools"`
	Prompts   []mcpclient.Item `json:"prompts,omitempty"`
	Resources []mcpclient.Item `json:"resources,omitempty"`
	Templates []mcpclient.Item `json:"templates,omitempty"`
}

// CatalogsPath is the folder of the kept catalogs
// (~/.local/share/gemkit/server-catalogs), beside the capabilities file.
func CatalogsPath(env map[string]string) (string, error) {
	caps, err := CapabilitiesPath(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(caps), "server-catalogs"), nil
}

// keptPath is the file of the server's kept catalog: named by a hash of
// its key, as extension and server names may hold any character.
func (s *server) keptPath() (string, error) {
	caps, err := s.m.capsPath()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(s.spec.Key()))
	return filepath.Join(filepath.Dir(caps), "server-catalogs", hex.EncodeToString(sum[:12])+".json"), nil
}

// readKept returns the server's kept catalog when it was listed started
// as it is now; ok is false when there is none (a missing, unreadable
// or foreign file is none).
func (s *server) readKept() (c Catalog, ok bool) {
	path, err := s.keptPath()
	if err != nil {
		return c, false
	}
	f, err := os.Open(path)
	if err != nil {
		return c, false
	}
	defer f.Close()
	var k keptCatalog
	if err := json.NewDecoder(io.LimitReader(f, maxKept)).Decode(&k); err != nil {
		s.m.log.Debug("a kept catalog cannot be read; the server is listed afresh", "path", path, "err", err)
		return c, false
	}
	if k.Start != s.spec.fingerprint() {
		return c, false
	}
	return s.catalogOf(k), true
}

// catalogOf is k as the server's Catalog.
func (s *server) catalogOf(k keptCatalog) Catalog {
	var c Catalog
	for _, t := range k.Tools {
		c.Tools = append(c.Tools, Tool{Spec: s.spec, Tool: t})
	}
	items := func(in []mcpclient.Item) []Item {
		out := make([]Item, 0, len(in))
		for _, it := range in {
			out = append(out, Item{Spec: s.spec, Item: it})
		}
		return out
	}
	c.Prompts, c.Resources, c.Templates = items(k.Prompts), items(k.Resources), items(k.Templates)
	return c
}

// keptOf is c as kept.
func (s *server) keptOf(c Catalog) keptCatalog {
	k := keptCatalog{Start: s.spec.fingerprint(), Tools: []mcpclient.Tool{}}
	for _, t := range c.Tools {
		k.Tools = append(k.Tools, t.Tool)
	}
	items := func(in []Item) []mcpclient.Item {
		var out []mcpclient.Item
		for _, it := range in {
			out = append(out, it.Item)
		}
		return out
	}
	k.Prompts, k.Resources, k.Templates = items(c.Prompts), items(c.Resources), items(c.Templates)
	return k
}

// keep writes c as the server's kept catalog (0600, atomically) when it
// differs from what is kept. The caller holds s.mu.
func (s *server) keep(c Catalog) {
	if kept, ok := s.readKept(); ok && sameCatalog(kept, c) {
		return
	}
	path, err := s.keptPath()
	if err == nil {
		var b []byte
		if b, err = json.Marshal(s.keptOf(c)); err == nil {
			if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
				err = fsutil.WriteFileAtomic(path, append(b, '\n'), 0o600)
			}
		}
	}
	if err != nil {
		s.m.log.Debug("keeping a server's catalog", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
	}
}

// sameCatalog reports whether a and b offer the same.
func sameCatalog(a, b Catalog) bool {
	norm := func(c Catalog) Catalog {
		for _, l := range []*[]Item{&c.Prompts, &c.Resources, &c.Templates} {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if len(c.Tools) == 0 {
			c.Tools = nil
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// fromKept answers a listing from the kept catalog when the server has
// not been listed in this process (nor answered from it before: a kept
// catalog that its server did not confirm is not offered again), and
// the person agrees to the
// extension as it is now, and starts the server behind the answer
// (confirm); ok is false when there is no kept catalog to answer from.
// The caller holds s.mu.
func (s *server) fromKept() (c Catalog, ok bool, err error) {
	if s.listed || s.run != nil || s.gone || s.keptTried {
		return c, false, nil
	}
	s.keptTried = true
	c, ok = s.readKept()
	if !ok {
		return c, false, nil
	}
	if err := s.allowed(); err != nil {
		return Catalog{}, true, err
	}
	s.catalog, s.listed, s.unconfirmed = c, true, true
	go s.confirm()
	return c, true, nil
}

// confirm starts the server whose catalog was answered from the kept
// one, and lists it. A different catalog replaces the kept one; a
// server that cannot start or list offers nothing until it is listed
// again, and that listing says why (confirmErr). Either way the
// listener hears that the server's lists changed.
func (s *server) confirm() {
	life := s.life
	if life == nil {
		life = context.Background()
	}
	ctx, cancel := context.WithTimeout(life, s.startTimeout())
	defer cancel()
	s.mu.Lock()
	if !s.unconfirmed || s.gone {
		s.mu.Unlock()
		return
	}
	s.unconfirmed = false
	kept := s.catalog
	c, err := s.listNow(ctx)
	changed := !s.gone
	if err != nil {
		s.catalog, s.listed, s.confirmErr = Catalog{}, false, err
	} else {
		changed = changed && !sameCatalog(c, kept)
	}
	s.mu.Unlock()
	if !changed {
		return
	}
	if f := s.m.listen.Load(); f != nil {
		(*f)(Event{Spec: s.spec, Method: mcpclient.ToolsListChanged})
	}
}
