package extmcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// What a server listed the last time gemkit listed it is kept (a file
// per server in CatalogsPath), by the fingerprint of what starts it, as
// what it declared is (completions.go). A gemkit mcp that has not
// started the server yet answers a client's first list from there, once
// the person's consent to the extension as it is now is checked, and
// starts the server behind the answer (the check and the sandbox's
// set-up at once, as at any start): its own listing then confirms the
// kept one, or replaces it and tells the clients (list_changed), or,
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
	Tools     []keptTool       `json:"tools"`
	Prompts   []mcpclient.Item `json:"prompts,omitempty"`
	Resources []mcpclient.Item `json:"resources,omitempty"`
	Templates []mcpclient.Item `json:"templates,omitempty"`
	// Failed, when set, is why gemkit mcp could not serve the server the
	// last time it started it so (lastlisting.go): then there is no
	// catalog to answer from.
	Failed *keptFailure `json:"failed,omitempty"`
}

// keptTool is an mcpclient.Tool as kept: what the server did not send
// stays absent, so that it reads back as it was listed.
type keptTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	Title        string          `json:"title,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
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
	return keptFile(filepath.Join(filepath.Dir(caps), "server-catalogs"), s.spec.Key()), nil
}

// keptFile is the file, in the folder of the kept catalogs dir, of the
// server of key (Spec.Key).
func keptFile(dir, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".json")
}

// readKept returns the server's kept catalog when it was listed started
// as it is now; ok is false when there is none (a missing, unreadable
// or foreign file is none, and so is a failure kept in its place).
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
	if k.Start != s.spec.fingerprint() || k.Failed != nil {
		return c, false
	}
	return s.catalogOf(k), true
}

// catalogOf is k as the server's Catalog.
func (s *server) catalogOf(k keptCatalog) Catalog {
	var c Catalog
	for _, t := range k.Tools {
		c.Tools = append(c.Tools, Tool{Spec: s.spec, Tool: mcpclient.Tool(t)})
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
	k := keptCatalog{Start: s.spec.fingerprint(), Tools: []keptTool{}}
	for _, t := range c.Tools {
		k.Tools = append(k.Tools, keptTool(t.Tool))
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
// differs from what is kept: the file is read once, and what this
// server kept since is remembered (s.cache.keptJSON), since a server that says
// its lists changed is listed again, at times twice as it starts. The
// caller holds s.mu.
func (s *server) keep(c Catalog) {
	b, err := json.Marshal(s.keptOf(c))
	if err != nil {
		s.m.log.Debug("keeping a server's catalog", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
		return
	}
	if s.cache.keptJSON == nil {
		if kept, ok := s.readKept(); ok && s.sameCatalog(kept, c) {
			s.cache.keptJSON = b
		}
	}
	if bytes.Equal(b, s.cache.keptJSON) {
		return
	}
	path, err := s.keptPath()
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = fsutil.WriteFileAtomic(path, append(b, '\n'), 0o600)
		}
	}
	if err != nil {
		s.m.log.Debug("keeping a server's catalog", "extension", s.spec.Extension, "server", s.spec.Server, "err", err)
		return
	}
	s.cache.keptJSON = b
}

// sameCatalog reports whether a and b, catalogs of the server, offer the
// same: whether they are kept alike (JSON, each schema compacted, as
// the encoder writes a json.RawMessage).
func (s *server) sameCatalog(a, b Catalog) bool {
	ja, erra := json.Marshal(s.keptOf(a))
	jb, errb := json.Marshal(s.keptOf(b))
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// verdict is a consent check under way (Spec.Allowed), which more than
// one may wait for: the answer from a kept catalog and the start behind
// it share one.
type verdict struct {
	done chan struct{}
	err  error
	// ahead: begun by Prepare, before any client asked, at began;
	// kept, the kept catalog Prepare read with it, for the answer.
	ahead bool
	began time.Time
	kept  *Catalog
	// copy is the folder of gemkit's copy of the extension as the
	// person agreed to it (Spec.Agreed), when the verdict is that copy:
	// the server runs from it, and the verdict is given at once.
	copy string
}

// aheadFor is how long a consent check begun ahead (Prepare) serves a
// start: a client lists within milliseconds of its initialize, and a
// check older than this is made again, so that what a start runs was
// checked no earlier before its start than when the check begins at
// the client's first list.
const aheadFor = time.Second

// check starts the server's consent check: gemkit's copy of the
// extension as the person agreed to it, when there is one for it as it
// is (Spec.Agreed), with the check of its pinned tree when it runs from
// one (Spec.PinnedTree), else the check of its folder.
func (s *server) check() *verdict {
	if s.spec.Agreed != nil && !s.spec.Remote() {
		if dir := s.spec.Agreed(); dir != "" {
			v := &verdict{done: make(chan struct{}), began: time.Now(), copy: dir}
			if s.spec.PinnedTree == nil {
				close(v.done)
				return v
			}
			// The copy vouches for the extension's folder, not for the
			// tree its package was pinned in.
			go func() {
				if err := s.spec.PinnedTree(); err != nil {
					v.err = fmt.Errorf("%s is not started: %w", s.who(), err)
				}
				close(v.done)
			}()
			return v
		}
	}
	return s.checkFolder()
}

// checkFolder starts the consent check of the extension's folder as it
// is (Spec.Allowed).
func (s *server) checkFolder() *verdict {
	v := &verdict{done: make(chan struct{}), began: time.Now()}
	go func() {
		v.err = s.allowed()
		close(v.done)
	}()
	return v
}

// wait returns the check's verdict, or ctx's error if it ends first.
func (v *verdict) wait(ctx context.Context) error {
	select {
	case <-v.done:
		return v.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fromKept finds the kept catalog to answer a listing from, when the
// server has not been listed in this process (nor answered from it
// before: a kept catalog its server did not confirm is not offered
// again). It starts the consent check and, behind it, the server
// (confirm), whose start uses the same check (s.cache.consent); the answer
// waits for the check only. ok is false when there is no kept catalog
// to answer from. The caller holds s.mu.
func (s *server) fromKept() (c Catalog, v *verdict, ok bool) {
	if s.cache.listed || s.proc.run != nil || s.proc.gone || s.cache.keptTried {
		return c, nil, false
	}
	s.cache.keptTried = true
	v = s.cache.takeConsent()
	if v != nil && v.kept != nil {
		// Read by Prepare with its check, at most aheadFor ago.
		c, v.kept = *v.kept, nil
	} else if c, ok = s.readKept(); !ok {
		s.cache.consent = v
		return c, nil, false
	}
	if v == nil {
		v = s.check()
	}
	s.cache.consent = v
	go s.confirm(c, v)
	return c, v, true
}

// Prepare begins, for each server that a client's first list will start
// (one not started yet whose catalog is kept: it was listed before),
// the consent check its start needs, as gemkit mcp begins to serve:
// the check hashes the extension's files (the walk of a node_modules
// takes milliseconds of both cores) and the program runs only once it
// passed, so that beginning it while the client starts and initializes
// brings the server's first answer closer. It starts nothing: a client
// that connects and goes leaves only the check done. Its verdict serves
// the start for aheadFor, and is then made again.
func (m *Manager) Prepare() {
	all := m.all()
	for _, s := range all {
		s.prepare()
	}
}

// prepare begins the server's consent check ahead when a client's first
// list will start it (Prepare).
func (s *server) prepare() {
	if s.spec.Allowed == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache.consent != nil || s.cache.listed || s.cache.keptTried || s.proc.run != nil || s.proc.gone {
		return
	}
	// Only a catalog kept for this very start (its fingerprint) is
	// answered from (fromKept): a file of the same key kept for another
	// start tells of no client's coming list.
	kept, ok := s.readKept()
	if !ok {
		return
	}
	v := s.check()
	v.ahead, v.kept = true, &kept
	s.cache.consent = v
}

// confirm starts the server whose catalog was answered from the kept
// one, c, and lists it. A different catalog replaces the kept one; a
// server that cannot start or list offers nothing until it is listed
// again, and that listing says why (confirmErr). Either way the
// listener hears that the server's lists changed. A refused consent
// check was the answer itself, and changes nothing here.
func (s *server) confirm(kept Catalog, v *verdict) {
	life := s.life
	if life == nil {
		life = context.Background()
	}
	// Not bounded here: the start and the listing bound themselves
	// (startTimeout), and the listing first waits for the calls begun
	// before the server ran, which their own timeouts bound (listNow).
	ctx := Background(life)
	s.listing.Lock()
	defer s.listing.Unlock()
	s.mu.Lock()
	if s.cache.listed || s.proc.gone {
		s.mu.Unlock()
		return
	}
	c, err := s.listNow(ctx)
	changed := !s.proc.gone
	if err != nil {
		<-v.done
		if v.err == nil {
			s.cache.confirmErr = err
		} else {
			changed = false
		}
	} else {
		changed = changed && !s.sameCatalog(c, kept)
	}
	s.mu.Unlock()
	if !changed {
		return
	}
	if f := s.m.listen.Load(); f != nil {
		(*f)(Event{Spec: s.spec, Method: mcpclient.ToolsListChanged})
	}
}
