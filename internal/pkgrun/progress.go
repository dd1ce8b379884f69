package pkgrun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// progress reads what npm prints (--loglevel=http: a line per request)
// and tells the person what the install fetches and how much so far; it
// keeps npm's error lines for the failure's words.
type progress struct {
	w        io.Writer
	terminal bool
	received *atomic.Int64
	// bound is what the install may write (Installer.MaxBytes), for
	// the words of a write past it.
	bound int64

	mu       sync.Mutex
	partial  []byte
	metadata int
	tarballs int
	last     string
	errors   []string
	warnings []string
	shown    bool // a status line is on the terminal
}

// progressEvery is how many tarballs a line tells at most, when the
// progress is not a terminal's one line.
const progressEvery = 25

// maxNPMLines bounds the npm lines kept for a failure.
const maxNPMLines = 12

func (p *progress) printf(format string, a ...any) {
	if p.w != nil {
		fmt.Fprintf(p.w, format, a...)
	}
}

// start says what is installed, from where and how.
func (p *progress) start(inv runnerline.Invocation, server, registry string, scripts bool, network []string) {
	what := inv.Request()
	if inv.Spec == "" {
		what += " (the newest)"
	}
	how := "install scripts off"
	if scripts {
		how = "install scripts on, as you allowed: run after, with no network and none of your npm configuration"
	}
	p.printf("Installing %s for %s from %s in gemkit's sandbox (no network but the registry%s, %s):\n", printable(what), printable(server), printable(registry), networkWords(network), how)
}

// networkWords are the person's settings the install reaches and
// trusts the registry with, after "the registry".
func networkWords(network []string) string {
	if len(network) == 0 {
		return ""
	}
	return ", " + printable(strings.Join(network, ", "))
}

// startScripts says that the install scripts run now.
func (p *progress) startScripts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	p.printf("  running the packages' install scripts (npm rebuild) in a sandbox of their own: no network, none of your npm configuration, nothing to write but the tree\n")
}

// npmLines are npm's error lines so far.
func (p *progress) npmLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.errors)
}

// startResolve says what is resolved, and from where (Resolve).
func (p *progress) startResolve(inv runnerline.Invocation, server, registry string, network []string) {
	what := inv.Request()
	if inv.Spec == "" {
		what += " (the newest)"
	}
	p.printf("Asking %s what %s for %s installs now, in gemkit's sandbox (no network but the registry%s, the packages' metadata only):\n", printable(registry), printable(what), printable(server), networkWords(network))
}

// resolved says what Resolve found.
func (p *progress) resolved(pkg, version string, packages int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	p.printf("  resolved %s: %s (%s of metadata fetched)\n", printable(pkg+" "+version), count(packages, "package", "packages"), Size(p.received.Load()))
}

// Write takes npm's output, line by line.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		p.line(string(p.partial[:i]))
		p.partial = p.partial[i+1:]
	}
	if len(p.partial) > 64<<10 {
		p.partial = p.partial[:0]
	}
	return len(b), nil
}

// flush reads a last line without its newline.
func (p *progress) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.partial) > 0 {
		p.line(string(p.partial))
		p.partial = nil
	}
	if p.shown {
		p.printf("\n")
		p.shown = false
	}
}

// npmFetch is npm's line for a request it made:
// "npm http fetch GET 200 https://registry.npmjs.org/open 14ms (cache miss)".
var npmFetch = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^npm http fetch (\w+) (\d+) (\S+)`) })

func (p *progress) line(l string) {
	l = strings.TrimRight(l, "\r")
	switch {
	case strings.HasPrefix(l, "npm error "), strings.HasPrefix(l, "npm ERR! "):
		if len(p.errors) < maxNPMLines && !strings.Contains(l, "A complete log of this run") {
			p.errors = append(p.errors, printable(l))
		}
		return
	case strings.HasPrefix(l, "npm warn "), strings.HasPrefix(l, "npm WARN "):
		// Deprecations say nothing the person can act on here; the
		// others (an engine the package does not support) do.
		if !strings.Contains(l, "deprecated") && len(p.warnings) < maxNPMLines {
			p.warnings = append(p.warnings, printable(l))
			p.clearLine()
			p.printf("  %s\n", printable(l))
		}
		return
	}
	m := npmFetch().FindStringSubmatch(l)
	if m == nil {
		return
	}
	u := m[3]
	name := fetchedName(u)
	if strings.HasSuffix(u, ".tgz") {
		p.tarballs++
	} else {
		p.metadata++
	}
	p.last = name
	fetched := Size(p.received.Load())
	switch {
	case p.terminal:
		p.printf("\r\x1b[K  fetched %s: %s so far (%s, %s)", printable(name), fetched, count(p.metadata, "package's metadata", "packages' metadata"), count(p.tarballs, "tarball", "tarballs"))
		p.shown = true
	case strings.HasSuffix(u, ".tgz") && (p.tarballs == 1 || p.tarballs%progressEvery == 0):
		p.printf("  fetched %s so far (%s, %s; the last: %s)\n", fetched, count(p.metadata, "package's metadata", "packages' metadata"), count(p.tarballs, "tarball", "tarballs"), printable(name))
	case p.tarballs == 0 && (p.metadata == 1 || p.metadata%progressEvery == 0):
		// npm asks for every package's metadata before its first
		// tarball: seconds, for a package of many dependencies, that a
		// log would otherwise show nothing of.
		p.printf("  resolving: %s fetched so far (the last: %s)\n", count(p.metadata, "package's metadata", "packages' metadata"), printable(name))
	}
}

// clearLine ends the terminal's status line before a line of its own.
func (p *progress) clearLine() {
	if p.shown {
		p.printf("\r\x1b[K")
		p.shown = false
	}
}

// done says what was installed.
func (p *progress) done(t Tree) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	what := t.Package + " " + t.Version
	if c := t.Engine.Choice(); c != "" {
		what += " (" + c + ")"
	}
	p.printf("  installed %s: %s, %s, %s on disk (%s fetched, %s)\n", printable(what), count(t.Packages, "package", "packages"), count(t.Files, "file", "files"), Size(t.Bytes), Size(t.Fetched), count(p.tarballs, "tarball", "tarballs"))
	if w := t.Engine.Warning(t.Package, t.Version, ""); w != "" {
		p.printf("  %s\n", printable(w))
	}
}

// count is n with the word for one or for more.
func count(n int, one, more string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, more)
}

// fetchedName is what a request's URL fetches, in words: a package's
// metadata (its name) or a tarball (its file name).
func fetchedName(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	p, err := url.PathUnescape(pu.EscapedPath())
	if err != nil {
		p = pu.Path
	}
	if i := strings.Index(p, "/-/"); i >= 0 {
		return p[i+3:]
	}
	return strings.TrimPrefix(p, "/")
}

// npmCode is npm's "npm error code E404".
var npmCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^npm (?:error|ERR!) code (\S+)`) })

// failure is npm's failure in words: what the person can act on first,
// then npm's own lines.
func (p *progress) failure(target string, inv runnerline.Invocation, registry string, waitErr error, denied []netproxy.Denial, hosts, trust []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &InstallError{Package: target, NPM: p.errors}
	for _, l := range p.errors {
		if m := npmCode().FindStringSubmatch(l); m != nil {
			e.Code = m[1]
			break
		}
	}
	text := strings.Join(p.errors, "\n")
	var ee *exec.ExitError
	exit := waitErr.Error()
	if errors.As(waitErr, &ee) {
		exit = fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	var refused, registryRefused, throughProxy []string
	for _, d := range denied {
		switch {
		case strings.HasPrefix(d.Reason, netproxy.UpstreamReason):
			throughProxy = append(throughProxy, d.String())
		case slices.Contains(hosts, net.JoinHostPort(d.Host, strconv.Itoa(d.Port))):
			registryRefused = append(registryRefused, d.String())
		default:
			refused = append(refused, d.String())
		}
	}
	switch {
	case len(throughProxy) > 0:
		e.Why = fmt.Sprintf("the registry of your npm configuration (%s) could not be reached through your proxy: %s", printable(registry), printable(strings.Join(throughProxy, "; ")))
	case untrusted(e.Code):
		e.Why = fmt.Sprintf("the certificate of the registry %s is not trusted (%s); the install trusted what your npx would: %s", printable(registry), e.Code, printable(trustedWords(trust)))
	case len(registryRefused) > 0:
		e.Why = fmt.Sprintf("gemkit's sandbox refused the install the registry of your npm configuration itself (%s): %s", printable(registry), printable(strings.Join(registryRefused, "; ")))
	case len(refused) > 0:
		e.Why = fmt.Sprintf("gemkit's sandbox refused the install a connection to what is not the registry of your npm configuration (%s): %s. The install reaches only the registries you configured; a package that fetches from elsewhere cannot be pinned", printable(registry), printable(strings.Join(refused, "; ")))
	case e.Code == "E404":
		e.Why = fmt.Sprintf("the registry %s has no such package (404): %s, or a package it depends on, is not there", printable(registry), printable(inv.Request()))
	case e.Code == "ETARGET":
		e.Why = fmt.Sprintf("the registry %s has no version of %s that matches %q", printable(registry), printable(inv.Package), printable(inv.Spec))
	case e.Code == "EINTEGRITY":
		e.Why = "a package's bytes did not match the integrity (SHA-512) the registry gave for them: the registry, or something between it and this computer, sent other bytes than it announced"
	case e.Code == "E401" || e.Code == "E403" || e.Code == "ENEEDAUTH":
		e.Why = fmt.Sprintf("the registry %s refused the install (%s): your npm configuration's credentials for it are missing or not accepted", printable(registry), e.Code)
	case strings.Contains(text, "invalid json") || strings.Contains(text, "Unexpected token") || strings.Contains(text, "not valid JSON") || e.Code == "EJSONPARSE":
		e.Why = fmt.Sprintf("the registry %s answered something that is not an npm package's metadata (not JSON)", printable(registry))
	case strings.HasPrefix(e.Code, "E5"):
		e.Why = fmt.Sprintf("the registry %s failed (HTTP %s)", printable(registry), strings.TrimPrefix(e.Code, "E"))
	case e.Code == "ECONNREFUSED" || e.Code == "ENOTFOUND" || e.Code == "EAI_AGAIN" || e.Code == "ECONNRESET" || e.Code == "ETIMEDOUT":
		e.Why = fmt.Sprintf("the registry %s could not be reached (%s)", printable(registry), e.Code)
	case e.Code == "EFBIG" || strings.Contains(text, "EFBIG"):
		e.Why = fmt.Sprintf("npm was writing more than the %s an install may write: the sandbox cut a file at that size (EFBIG), and npm failed; a package this large is not one gemkit pins", Size(p.bound))
	case e.Code == "EBADPLATFORM" || e.Code == "ENOTSUP":
		e.Why = "the package does not support this computer's system or processor"
	case e.Code == "ERESOLVE":
		e.Why = "npm could not find versions of the packages that fit together"
	case e.Code != "":
		e.Why = fmt.Sprintf("npm failed with %s (%s)", e.Code, exit)
	default:
		e.Why = fmt.Sprintf("npm failed (%s)", exit)
	}
	return e
}

// trustedWords say what an install trusted, from the person's
// settings it used (trust, Config.trustWords).
func trustedWords(trust []string) string {
	if len(trust) == 0 {
		return "node's own authorities alone: NODE_EXTRA_CA_CERTS is not set, and your npm configuration names no cafile or ca"
	}
	return strings.Join(trust, ", ")
}

// untrusted reports whether npm's error code is node's for a
// certificate it does not trust (node's doc, "X509 certificate error
// codes").
func untrusted(code string) bool {
	switch code {
	case "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_GET_ISSUER_CERT", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
		"UNABLE_TO_VERIFY_LEAF_SIGNATURE", "CERT_UNTRUSTED", "CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID", "ERR_TLS_CERT_ALTNAME_INVALID":
		return true
	}
	return false
}

// scriptsFailure is the failure of the packages' install scripts (npm
// rebuild) in words, then npm's own lines.
func (p *progress) scriptsFailure(target string, waitErr error, denied []netproxy.Denial) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &InstallError{Package: target, NPM: p.errors}
	for _, l := range p.errors {
		if m := npmCode().FindStringSubmatch(l); m != nil {
			e.Code = m[1]
			break
		}
	}
	exit := waitErr.Error()
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		exit = fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	e.Why = fmt.Sprintf("its packages' install scripts failed (%s), run as you allowed in a sandbox of their own: no network, none of your npm configuration, nothing to write but the tree", exit)
	if len(denied) > 0 {
		var refused []string
		for _, d := range denied {
			refused = append(refused, d.String())
		}
		e.Why += fmt.Sprintf("; the sandbox refused them %s: a script that fetches what npm did not cannot run", printable(strings.Join(refused, "; ")))
	}
	if e.Code == "EFBIG" || strings.Contains(strings.Join(p.errors, "\n"), "EFBIG") {
		e.Why = fmt.Sprintf("its packages' install scripts were writing more than the %s an install may write: the sandbox cut a file at that size (EFBIG)", Size(p.bound))
	}
	return e
}

// printable is s fit to print on one line: what a registry or npm
// chose is escaped.
func printable(s string) string { return extension.Printable(s) }
