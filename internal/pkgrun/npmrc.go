package pkgrun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/fsutil"
)

// DefaultRegistry is npm's registry when the person's configuration
// names none.
const DefaultRegistry = "https://registry.npmjs.org/"

// Config is the part of the person's npm configuration an install uses:
// where packages come from (the registry, a mirror, a registry per
// scope), the credentials for those registries and how to trust them
// (TLS). It is read from the person's global and user npmrc and their
// npm_config_ variables, never from a project's .npmrc (a workspace's,
// which a tool may write): the install then reads only the npmrc gemkit
// writes from it, in a folder of its own, and the server never sees it.
type Config struct {
	// Registry is the default registry's URL, ending in "/"; Scopes the
	// registry of each scope that has one ("@acme" → URL).
	Registry string
	Scopes   map[string]string
	// Sources are the files the configuration was read from.
	Sources []string
	// settings are the kept settings, by key; files the files their
	// *file settings name (cafile, certfile, keyfile), by key, to copy
	// into the install's configuration folder.
	settings map[string]string
	files    map[string]string
	// from is where each kept setting, and each of proxies, was read
	// (a file, or $npm_config_x).
	from map[string]string
	// proxies are npm's proxy settings (proxyKeys), never written for
	// npm; proxyEnv the proxy variables npm would read (reach.go),
	// set by readConfig.
	proxies  map[string]string
	proxyEnv map[string][2]string
	// extraCA is the file NODE_EXTRA_CA_CERTS names, extraCAData what
	// it holds, copied into the install's configuration folder.
	extraCA     string
	extraCAData []byte
}

// kept says whether an npmrc key is one an install writes for npm:
// registries, their credentials (npm's "nerf-darted" //host/path/:key
// form, and the default registry's old top-level form), TLS and the
// network's patience. The proxies are read apart (proxyKeys: the
// sandbox's proxy goes through them, npm does not); the rest (scripts,
// prefixes, a shell, node options) is left out: the install runs with
// gemkit's settings.
func kept(key string) bool {
	switch {
	case key == "registry", strings.HasPrefix(key, "@") && strings.HasSuffix(key, ":registry"):
		return true
	case strings.HasPrefix(key, "//"):
		return true
	}
	switch key {
	case "_auth", "_authToken", "username", "_password", "email", "always-auth",
		"strict-ssl", "ca", "ca[]", "cafile", "cert", "key", "certfile", "keyfile",
		"fetch-retries", "fetch-retry-factor", "fetch-retry-mintimeout", "fetch-retry-maxtimeout", "fetch-timeout",
		"maxsockets", "replace-registry-host", "before":
		return true
	}
	return false
}

// maxNpmrc bounds an npmrc file read; maxCertFile a certificate file
// one names.
const (
	maxNpmrc    = 1 << 20
	maxCertFile = 4 << 20
)

// ReadConfig reads the person's npm configuration from their
// environment env (HOME, NPM_CONFIG_USERCONFIG, NPM_CONFIG_GLOBALCONFIG,
// npm_config_*) for an npm run by node, the real path of the node
// program (npm's global configuration is <prefix>/etc/npmrc beside it).
// Later sources win, as in npm: the global npmrc, the user npmrc, the
// environment.
func ReadConfig(env map[string]string, node string) (Config, error) {
	c := Config{Scopes: map[string]string{}, settings: map[string]string{}, files: map[string]string{},
		from: map[string]string{}, proxies: map[string]string{}}
	getenv := func(k string) string {
		// npm reads its variables in any case (npm_config_x, NPM_CONFIG_X).
		if v, ok := env[k]; ok {
			return v
		}
		return env[strings.ToUpper(k)]
	}
	prefix := getenv("npm_config_prefix")
	if prefix == "" {
		prefix = env["PREFIX"]
	}
	if prefix == "" && node != "" {
		prefix = filepath.Dir(filepath.Dir(node))
	}
	global := getenv("npm_config_globalconfig")
	if global == "" && prefix != "" {
		global = filepath.Join(prefix, "etc", "npmrc")
	}
	user := getenv("npm_config_userconfig")
	if user == "" && env["HOME"] != "" {
		user = filepath.Join(env["HOME"], ".npmrc")
	}
	for _, f := range []string{global, user} {
		if f == "" || !filepath.IsAbs(f) {
			continue
		}
		data, err := readRegular(f, maxNpmrc)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Config{}, fmt.Errorf("npm configuration %s: %w", f, err)
		}
		c.Sources = append(c.Sources, f)
		if err := c.parse(data, f, env); err != nil {
			return Config{}, err
		}
	}
	// npm_config_<key> variables, npm's way: the prefix in any case, then
	// "_" read as "-" but for a leading one (_authToken).
	var keys []string
	for k := range env {
		if len(k) > len("npm_config_") && strings.EqualFold(k[:len("npm_config_")], "npm_config_") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := k[len("npm_config_"):]
		if !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, "//") {
			name = strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		}
		switch {
		case kept(name):
			c.settings[name] = env[k]
		case slices.Contains(proxyKeys, name):
			c.proxies[name] = env[k]
		default:
			continue
		}
		c.from[name] = "$" + k
		c.Sources = append(c.Sources, "$"+k)
	}
	if err := c.finish(); err != nil {
		return Config{}, err
	}
	if err := c.readExtraCA(env); err != nil {
		return Config{}, err
	}
	return c, nil
}

// readConfig is ReadConfig of the environment environ, in its order,
// with the proxy variables npm would read (proxyEnv).
func readConfig(environ []string, node string) (Config, error) {
	c, err := ReadConfig(envmap.Of(environ), node)
	if err != nil {
		return Config{}, err
	}
	c.proxyEnv = proxyEnv(environ)
	return c, nil
}

// envRef is an npmrc's ${NAME} (and ${NAME?}, empty when unset).
var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([^${}?]+)(\?)?\}`) })

// parse reads one npmrc (ini: key = value, ; and # comments, sections
// ignored as npm does) into c, expanding ${NAME} from env.
func (c *Config) parse(data []byte, file string, env map[string]string) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxNpmrc)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == ';' || line[0] == '#' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue // npm reads a bare key as true; none it keeps is one
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			if u, err := strconv.Unquote(`"` + v[1:len(v)-1] + `"`); err == nil {
				v = u
			} else {
				v = v[1 : len(v)-1]
			}
		}
		var missing string
		expand := func(s string) string {
			return envRef().ReplaceAllStringFunc(s, func(ref string) string {
				m := envRef().FindStringSubmatch(ref)
				val, set := env[m[1]]
				if !set && m[2] == "" && missing == "" {
					missing = m[1]
				}
				return val
			})
		}
		k, v = expand(k), expand(v)
		proxy := slices.Contains(proxyKeys, k)
		if !kept(k) && !proxy {
			continue
		}
		if missing != "" {
			return fmt.Errorf("npm configuration %s, line %d: %s uses ${%s}, which is not set in your environment (npm would fail the same way)", file, n, k, missing)
		}
		if proxy {
			c.proxies[k] = v
		} else {
			c.settings[k] = v
		}
		c.from[k] = file
	}
	return sc.Err()
}

// finish works out the registries and reads the certificate files the
// settings name.
func (c *Config) finish() error {
	c.Registry = DefaultRegistry
	if r := c.settings["registry"]; r != "" {
		c.Registry = r
	}
	for k, v := range c.settings {
		if scope, ok := strings.CutSuffix(k, ":registry"); ok && strings.HasPrefix(scope, "@") {
			c.Scopes[scope] = v
		}
	}
	check := func(what, u string) (string, error) {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return "", fmt.Errorf("npm configuration: the %s %q is not an http or https URL", what, redact(u))
		}
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		return u, nil
	}
	var err error
	if c.Registry, err = check("registry", c.Registry); err != nil {
		return err
	}
	for s, u := range c.Scopes {
		if c.Scopes[s], err = check("registry of "+s, u); err != nil {
			return err
		}
	}
	for k, v := range c.settings {
		if !strings.HasSuffix(k, "file") || v == "" {
			continue
		}
		if !filepath.IsAbs(v) {
			return fmt.Errorf("npm configuration: %s %q is not an absolute path", k, v)
		}
		data, err := readRegular(v, maxCertFile)
		if err != nil {
			return fmt.Errorf("npm configuration: %s %s: %w", k, v, err)
		}
		c.files[k] = string(data)
	}
	return nil
}

// Hosts are the hosts the install may reach: each registry's, with its
// port, in the form of network.allowedHosts.
func (c Config) Hosts() []string {
	var out []string
	add := func(u string) {
		p, err := url.Parse(u)
		if err != nil {
			return
		}
		port := p.Port()
		if port == "" {
			port = "443"
			if p.Scheme == "http" {
				port = "80"
			}
		}
		h := net.JoinHostPort(p.Hostname(), port)
		for _, o := range out {
			if o == h {
				return
			}
		}
		out = append(out, h)
	}
	add(c.Registry)
	scopes := make([]string, 0, len(c.Scopes))
	for s := range c.Scopes {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	for _, s := range scopes {
		add(c.Scopes[s])
	}
	return out
}

// RegistryFor is the registry a package comes from: its scope's, else
// the default one.
func (c Config) RegistryFor(pkg string) string {
	if scope, _, ok := strings.Cut(pkg, "/"); ok && strings.HasPrefix(scope, "@") {
		if r, ok := c.Scopes[scope]; ok {
			return r
		}
	}
	return c.Registry
}

// write writes the npmrc the install reads into dir (0600), with the
// certificate files copied beside it and named there.
func (c Config) write(dir string) error {
	keys := make([]string, 0, len(c.settings))
	for k := range c.settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("; written by gemkit from your npm configuration for one install, and removed after it\n")
	for _, k := range keys {
		v := c.settings[k]
		if data, ok := c.files[k]; ok {
			p := filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(k, "//"), "/", "_")+".pem")
			if err := fsutil.WriteFileAtomic(p, []byte(data), 0o600); err != nil {
				return err
			}
			v = p
		}
		fmt.Fprintf(&b, "%s=%s\n", k, strconv.Quote(v))
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, "npmrc"), []byte(b.String()), 0o600); err != nil {
		return err
	}
	if c.extraCA != "" {
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, extraCAName), c.extraCAData, 0o600); err != nil {
			return err
		}
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, "global-npmrc"), nil, 0o600)
}

// nodeEnv are the variables of node's own that the install's npm,
// whose configuration is in dir (write), gets from the person's:
// NODE_EXTRA_CA_CERTS, naming the copy there.
func (c Config) nodeEnv(dir string) []string {
	if c.extraCA == "" {
		return nil
	}
	return []string{"NODE_EXTRA_CA_CERTS=" + filepath.Join(dir, extraCAName)}
}

// redact is a URL without the credentials it may carry.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

// readRegular reads the person's own file at path (a configuration
// file they keep, not an extension's): a regular file only, opened
// without blocking, bounded.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
