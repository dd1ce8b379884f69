// Package npmregistrytest serves an npm registry on loopback for tests,
// so that what installs packages from a registry (internal/pkgrun's npm
// in gemkit's sandbox) is tested with no outside registry: the
// packuments (a package's metadata: its versions, each with its
// dist.tarball URL on this server and its SHA-512 integrity) and the
// tarballs, built at test time from package trees already installed on
// the machine (interop/'s, by scripts/setup-and-test) or from files a
// test writes. A test can publish a new version while it runs, hold a
// request until it lets it go (an install interrupted half way), and
// make the registry misbehave in the ways real ones do (a missing
// package, a body that is not JSON, a server error, bytes that do not
// match their integrity, a tarball on another host). Packuments carry
// an ETag, and a request that names it (If-None-Match) is answered 304
// with no body, as registry.npmjs.org answers npm's revalidation of
// what its cache holds. What would change the registry (a publish, an
// unpublish: any method but GET and HEAD) is refused and recorded
// (Writes).
//
// The packument's form is the registry's, as npm reads it
// (docs.npmjs.com, "registry" and the package metadata API of
// github.com/npm/registry, "package-metadata.md"): "name",
// "dist-tags" and "versions", each version the package's package.json
// with "dist": {"tarball", "integrity", "shasum"}. A tarball holds the
// package's files under "package/", as `npm pack` writes them.
package npmregistrytest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// TB is the part of testing.TB the registry uses, so that a benchmark
// program (bench/extmcp) can serve one too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Breakage is a way the registry misbehaves for one package.
type Breakage int

const (
	// NotFound answers the package's packument 404, as for a name the
	// registry does not have.
	NotFound Breakage = iota + 1
	// NotJSON answers its packument with an HTML page.
	NotJSON
	// ServerError answers its packument 500.
	ServerError
	// WrongBytes serves its tarballs with one byte changed, under the
	// integrity of the right ones.
	WrongBytes
	// ElsewhereTarball gives its tarballs' URLs on another host
	// (127.0.0.2, the same port), which an install allowed only this
	// registry cannot reach.
	ElsewhereTarball
)

// Cache keeps the tarballs built from installed packages across the
// registries of a test binary, so that a large tree is packed once. The
// zero value is ready to use.
type Cache struct {
	mu    sync.Mutex
	built map[string]*tarball
}

func (c *Cache) get(key string) *tarball {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		c.built = map[string]*tarball{}
	}
	t := c.built[key]
	if t == nil {
		t = &tarball{}
		c.built[key] = t
	}
	return t
}

// tarball is a version's packed files, built once.
type tarball struct {
	once      sync.Once
	data      []byte
	integrity string
	shasum    string
	err       error
}

// version is one version of a package: its package.json and where its
// files come from.
type version struct {
	manifest map[string]any
	dir      string            // an installed package's folder, or
	files    map[string]string // the files of a package a test wrote
	gzipped  bool              // packed compressed (PublishGzipped)
	cacheKey string
	tgz      *tarball
}

// Registry is an npm registry served on 127.0.0.1.
type Registry struct {
	// URL is the registry's URL, ending in "/"; Host its host:port,
	// which an install's sandbox must be allowed; Addr the address it
	// listens on (Host, unless it is served under a name: NewTLS).
	URL, Host, Addr string
	// CA is, for a registry served over TLS (NewTLS), the certificate
	// of the authority that signed its own, PEM: the one to trust.
	CA []byte

	t     TB
	srv   *httptest.Server
	cache *Cache

	mu       sync.Mutex
	versions map[string]map[string]*version
	latest   map[string]string
	broken   map[string]Breakage
	holds    map[string]*hold
	requests []string
	auth     []string
	writes   []Write
}

type hold struct {
	// after is how many bytes of the tarball are sent before it holds.
	after   int
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

// Write is a request that would change the registry (a publish: PUT),
// which it refuses.
type Write struct {
	Method, Path, Authorization string
}

// New starts a registry for the test t, closed when it ends; cache,
// when not nil, keeps the tarballs built from installed packages for
// other registries of the test binary.
func New(t TB, cache *Cache) *Registry {
	t.Helper()
	r := newRegistry(t, cache)
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.started()
	return r
}

func newRegistry(t TB, cache *Cache) *Registry {
	if cache == nil {
		cache = &Cache{}
	}
	return &Registry{t: t, cache: cache, versions: map[string]map[string]*version{}, latest: map[string]string{},
		broken: map[string]Breakage{}, holds: map[string]*hold{}}
}

// started ends the server with the test, and names it: URL, Host and
// Addr on 127.0.0.1.
func (r *Registry) started() {
	r.t.Cleanup(func() {
		r.mu.Lock()
		for _, h := range r.holds {
			h.once.Do(func() { close(h.release) })
		}
		r.mu.Unlock()
		r.srv.Close()
	})
	u, _ := url.Parse(r.srv.URL)
	r.URL, r.Host, r.Addr = r.srv.URL+"/", u.Host, u.Host
}

// AddInstalled serves every package of the tree npm installed in dir
// (its package-lock.json and node_modules): each at the version the
// lock names, packed from its folder there. A package the lock names
// but the tree lacks (an optional one for another system) is not
// served, as a registry without it.
func (r *Registry) AddInstalled(dir string) {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		r.t.Fatalf("npmregistrytest: %v", err)
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
			Link    bool   `json:"link"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &lock); err != nil {
		r.t.Fatalf("npmregistrytest: %s: %v", dir, err)
	}
	for p, e := range lock.Packages {
		if p == "" || e.Link || !strings.Contains(p, "node_modules/") {
			continue
		}
		pkgDir := filepath.Join(dir, filepath.FromSlash(p))
		if _, err := os.Stat(filepath.Join(pkgDir, "package.json")); err != nil {
			continue
		}
		r.AddDir(pkgDir)
	}
}

// AddDir serves the installed package in dir at the version its
// package.json names.
func (r *Registry) AddDir(dir string) (name, ver string) {
	r.t.Helper()
	m := r.readManifest(dir)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		r.t.Fatalf("npmregistrytest: %v", err)
	}
	v := &version{manifest: m, dir: real, cacheKey: real + "\x00" + m["version"].(string)}
	r.add(v, false)
	return m["name"].(string), m["version"].(string)
}

// Publish serves a new version of a package, made of files (slash
// paths to contents; "package.json" names it and its version), and
// makes it the package's latest, as `npm publish` does.
func (r *Registry) Publish(files map[string]string) {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(files["package.json"]), &m); err != nil {
		r.t.Fatalf("npmregistrytest: the package.json of a published package: %v", err)
	}
	r.checkManifest(m, "published files")
	r.add(&version{manifest: m, files: files}, true)
}

// PublishGzipped publishes files as Publish does, in a tarball
// compressed as npm pack compresses it, so that what the install
// writes (the files) can be far more than what it fetched.
func (r *Registry) PublishGzipped(files map[string]string) {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(files["package.json"]), &m); err != nil {
		r.t.Fatalf("npmregistrytest: the package.json of a published package: %v", err)
	}
	r.checkManifest(m, "published files")
	r.add(&version{manifest: m, files: files, gzipped: true}, true)
}

// PublishDir publishes a new version of the installed package in dir:
// its files, its package.json's version set to ver, each file passed
// through edit (nil: unchanged) so that the new version's bytes differ
// where the test looks. It becomes the package's latest.
func (r *Registry) PublishDir(dir, ver string, edit func(name string, data []byte) []byte) {
	r.t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == "node_modules" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "package.json" {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				return err
			}
			m["version"] = ver
			b, _ = json.MarshalIndent(m, "", "  ")
		}
		if edit != nil {
			b = edit(rel, b)
		}
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		r.t.Fatalf("npmregistrytest: publishing %s: %v", dir, err)
	}
	r.Publish(files)
}

func (r *Registry) readManifest(dir string) map[string]any {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		r.t.Fatalf("npmregistrytest: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		r.t.Fatalf("npmregistrytest: %s: %v", dir, err)
	}
	r.checkManifest(m, dir)
	return m
}

func (r *Registry) checkManifest(m map[string]any, where string) {
	if n, _ := m["name"].(string); n == "" {
		r.t.Fatalf("npmregistrytest: %s: package.json has no name", where)
	}
	if v, _ := m["version"].(string); v == "" {
		r.t.Fatalf("npmregistrytest: %s: package.json has no version", where)
	}
}

func (r *Registry) add(v *version, latest bool) {
	name, ver := v.manifest["name"].(string), v.manifest["version"].(string)
	if v.cacheKey != "" {
		v.tgz = r.cache.get(v.cacheKey)
	} else {
		v.tgz = &tarball{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.versions[name] == nil {
		r.versions[name] = map[string]*version{}
	}
	r.versions[name][ver] = v
	if latest || r.latest[name] == "" || newer(ver, r.latest[name]) {
		r.latest[name] = ver
	}
}

// Break makes the registry misbehave for the package name as how says.
func (r *Registry) Break(name string, how Breakage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broken[name] = how
}

// Hold holds every request for the package name's tarballs (of any
// version) until release is called: reached is closed when the first
// one arrives. A held request ends early when its client goes.
func (r *Registry) Hold(name string) (reached <-chan struct{}, release func()) {
	return r.HoldAfter(name, 0)
}

// HoldAfter holds every request for the package name's tarballs after
// their first n bytes were sent, until release is called: reached is
// closed when the first one has sent them. A client that stops reading
// before then never reaches the hold.
func (r *Registry) HoldAfter(name string, n int) (reached <-chan struct{}, release func()) {
	h := &hold{after: n, reached: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	r.holds[name] = h
	r.mu.Unlock()
	return h.reached, func() { h.once.Do(func() { close(h.release) }) }
}

// Requests are the paths asked so far, in order.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Writes are the requests that would have changed the registry, in
// order.
func (r *Registry) Writes() []Write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes...)
}

// Authorizations are the Authorization headers the requests carried.
func (r *Registry) Authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// Latest is the version the registry's latest tag names for name.
func (r *Registry) Latest(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest[name]
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	p, err := url.PathUnescape(req.URL.EscapedPath())
	if err != nil {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests = append(r.requests, p)
	if a := req.Header.Get("Authorization"); a != "" {
		r.auth = append(r.auth, a)
	}
	r.mu.Unlock()
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		r.mu.Lock()
		r.writes = append(r.writes, Write{Method: req.Method, Path: p, Authorization: req.Header.Get("Authorization")})
		r.mu.Unlock()
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p = strings.TrimPrefix(p, "/")
	if name, file, ok := strings.Cut(p, "/-/"); ok {
		r.serveTarball(w, req, name, file)
		return
	}
	r.servePackument(w, req, p)
}

func (r *Registry) servePackument(w http.ResponseWriter, req *http.Request, name string) {
	r.mu.Lock()
	vs := r.versions[name]
	how := r.broken[name]
	latest := r.latest[name]
	list := make([]*version, 0, len(vs))
	for _, v := range vs {
		list = append(list, v)
	}
	r.mu.Unlock()
	switch {
	case len(list) == 0 || how == NotFound:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"Not found"}`)
		return
	case how == NotJSON:
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Service temporarily replaced by a captive portal</body></html>")
		return
	case how == ServerError:
		http.Error(w, `{"error":"internal server error"}`, http.StatusInternalServerError)
		return
	}
	base := r.URL
	if how == ElsewhereTarball {
		base = strings.Replace(base, "127.0.0.1", "127.0.0.2", 1)
	}
	versions := map[string]any{}
	for _, v := range list {
		t := r.build(v)
		if t.err != nil {
			http.Error(w, t.err.Error(), http.StatusInternalServerError)
			return
		}
		doc := map[string]any{}
		for k, val := range v.manifest {
			doc[k] = val
		}
		ver := v.manifest["version"].(string)
		doc["dist"] = map[string]any{"tarball": base + name + "/-/" + path.Base(name) + "-" + ver + ".tgz", "integrity": t.integrity, "shasum": t.shasum}
		if hasInstallScript(v.manifest) {
			doc["hasInstallScript"] = true
		}
		versions[ver] = doc
	}
	b, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest}, "versions": versions})
	sum := sha1.Sum(b)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "public, max-age=300")
	if req.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (r *Registry) serveTarball(w http.ResponseWriter, req *http.Request, name, file string) {
	r.mu.Lock()
	var v *version
	for ver, cand := range r.versions[name] {
		if file == path.Base(name)+"-"+ver+".tgz" {
			v = cand
		}
	}
	h := r.holds[name]
	how := r.broken[name]
	r.mu.Unlock()
	if v == nil {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	t := r.build(v)
	data := t.data
	if how == WrongBytes {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0xff
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	if h != nil {
		if n := min(h.after, len(data)); n > 0 {
			if _, err := w.Write(data[:n]); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			data = data[n:]
		}
		select {
		case <-h.reached:
		default:
			close(h.reached)
		}
		select {
		case <-h.release:
		case <-req.Context().Done():
			return
		}
	}
	w.Write(data)
}
