package pkgrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/npmregistrytest"
	"github.com/gemkit/gemkit/internal/sandbox"
)

// noNames is a resolver that knows no name: what the install reaches
// by a name, it reaches through the person's proxy or not at all.
type noNames struct{}

func (noNames) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// reachInstaller is testInstaller for the registry r with the npmrc
// given and the person's variables env beside PATH and HOME; its
// sandbox resolves no name.
// The npm of the machine's own global configuration (its
// $PREFIX/etc/npmrc, which may name a cafile, as this machine's names
// the system's bundle) is left out by an empty one (env's
// NPM_CONFIG_GLOBALCONFIG), unless env names another.
func reachInstaller(t *testing.T, r *npmregistrytest.Registry, npmrc string, env ...string) *Installer {
	t.Helper()
	in, home := testInstaller(t, r, npmrc)
	empty := filepath.Join(home, "global-npmrc")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in.Environ = append(append(in.Environ, "NPM_CONFIG_GLOBALCONFIG="+empty), env...)
	in.Launcher = &sandbox.Launcher{Resolver: noNames{}}
	return in
}

// npxRuns runs the person's own npx (outside any sandbox) as the
// installer in would run npm, for hello-mcp: whether it ran the
// package.
func npxRuns(t *testing.T, in *Installer) bool {
	t.Helper()
	cmd := execCommand("npx")
	cmd.Args = []string{"npx", "-y", "hello-mcp"}
	cache := t.TempDir()
	cmd.Env = append(slices.Clone(in.Environ), "npm_config_cache="+cache, "npm_config_update_notifier=false")
	cmd.Dir = cache
	out, err := cmd.CombinedOutput()
	return err == nil && strings.HasPrefix(string(out), "hello-mcp 1.0.0")
}

// caFile writes the registry's authority into a file of the test's,
// readable by whoever runs it.
func caFile(t *testing.T, r *npmregistrytest.Registry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "company-ca.pem")
	if err := os.WriteFile(p, r.CA, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInstallTrustsPersonsCA: a registry served over TLS with a
// certificate whose authority only the person's settings trust (a
// company's mirror: dynatrace-mcp-server's pin failed with
// SELF_SIGNED_CERT_IN_CHAIN where the person's npx listed its tools)
// is installed from when NODE_EXTRA_CA_CERTS, npm's cafile or npm's ca
// names it, as npx would, and the install says so; with none of them
// it fails in words that say what it trusted, and keeps nothing. The
// tree holds none of it.
func TestInstallTrustsPersonsCA(t *testing.T) {
	needNPM(t)
	// By name: npm reaches an https registry through a proxy (the
	// sandbox's, as the person's would) checking the certificate for
	// "localhost" when the registry is an IP literal (https-proxy-agent
	// leaves the host out of its TLS connection), so a certificate
	// for 127.0.0.1 alone would fail there as through any proxy.
	r := npmregistrytest.NewTLS(t, nil, "localhost")
	publishHello(r, "1.0.0", "1.0.0")
	ca := caFile(t, r)
	base := "registry=" + r.URL + "\nfetch-retries=0\n"
	inline, _ := json.Marshal(string(r.CA))
	system := filepath.Join(t.TempDir(), "npmrc")
	writeTest(t, system, "cafile=/etc/ssl/certs/ca-certificates.crt\n")
	for _, tc := range []struct {
		name, npmrc string
		env         []string
		says        string
		ok          bool
	}{
		{"NODE_EXTRA_CA_CERTS", base, []string{"NODE_EXTRA_CA_CERTS=" + ca}, "trusting the certificates in " + ca + " (NODE_EXTRA_CA_CERTS) beside node's own", true},
		{"cafile", base + "cafile=" + ca + "\n", nil, "trusting only the certificates in " + ca + " (cafile in ", true},
		{"ca", base + "ca=" + string(inline) + "\n", nil, "trusting only the certificates of ca in ", true},
		{"none", base, nil, "node's own authorities alone: NODE_EXTRA_CA_CERTS is not set, and your npm configuration names no cafile or ca", false},
		// A global npmrc naming the system's bundle as cafile (this
		// machine's does) replaces NODE_EXTRA_CA_CERTS for npx too.
		{"NODE_EXTRA_CA_CERTS replaced by a cafile", base, []string{"NODE_EXTRA_CA_CERTS=" + ca, "NPM_CONFIG_GLOBALCONFIG=" + system},
			"trusting only the certificates in /etc/ssl/certs/ca-certificates.crt (cafile in " + system + "), not those in " + ca + " (NODE_EXTRA_CA_CERTS): npm's cafile or ca replaces node's authorities, these among them, as for your npx", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := reachInstaller(t, r, tc.npmrc, tc.env...)
			if npx := npxRuns(t, in); npx != tc.ok {
				t.Fatalf("the person's own npx ran the package: %v, want %v", npx, tc.ok)
			}
			var progress bytes.Buffer
			in.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tr, err := in.Install(ctx, Request{Extension: "hello", Server: "hello", Invocation: hello(t)})
			if !tc.ok {
				var ie *InstallError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), "the certificate of the registry "+r.URL+" is not trusted (SELF_SIGNED_CERT_IN_CHAIN); the install trusted what your npx would: "+tc.says) {
					t.Fatalf("err = %v\nwant it to say %q\n%s", err, tc.says, progress.String())
				}
				wantNothingKept(t, in, "hello")
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, progress.String())
			}
			if tr.Version != "1.0.0" || !slices.ContainsFunc(tr.Network, func(s string) bool { return strings.HasPrefix(s, tc.says) }) {
				t.Errorf("tree %s %s, Network %q: want it to say %q", tr.Package, tr.Version, tr.Network, tc.says)
			}
			wantTreeWithout(t, tr.Dir, r.CA[30:90])
		})
	}
}

// TestInstallThroughPersonsProxy: a registry only the person's proxy
// reaches (its name known to that proxy alone, over TLS trusted through
// NODE_EXTRA_CA_CERTS) is installed from through that proxy, named as
// npm would take it (HTTPS_PROXY, https_proxy, npm's https-proxy or
// proxy), with its credentials, which neither npm nor the tree ever
// holds; the proxy is asked for the registry alone. Wrong credentials
// fail in words naming the proxy and its answer.
func TestInstallThroughPersonsProxy(t *testing.T) {
	needNPM(t)
	r := npmregistrytest.NewTLS(t, nil, "registry.corp.test")
	publishHello(r, "1.0.0", "1.0.0")
	ca := caFile(t, r)
	px := npmregistrytest.NewProxy(t, "ann", "pr0xy-secret")
	px.Route(r.Host, r.Addr)
	base := "registry=" + r.URL + "\nfetch-retries=0\n"
	shown := strings.Replace(px.URL, "ann:pr0xy-secret@", "", 1)
	bad := strings.Replace(px.URL, "pr0xy-secret", "wrong", 1)
	for _, tc := range []struct {
		name, npmrc string
		env         []string
		says, fails string
	}{
		{"HTTPS_PROXY", base, []string{"HTTPS_PROXY=" + px.URL}, "through your proxy " + shown + " ($HTTPS_PROXY)", ""},
		{"https_proxy after HTTPS_PROXY", base, []string{"HTTPS_PROXY=" + bad, "https_proxy=" + px.URL}, "through your proxy " + shown + " ($https_proxy)", ""},
		{"npm's https-proxy", base + "https-proxy=" + px.URL + "\n", []string{"HTTPS_PROXY=" + bad}, "through your proxy " + shown + " (https-proxy in ", ""},
		{"npm's proxy", base + "proxy=" + px.URL + "\n", nil, "through your proxy " + shown + " (proxy in ", ""},
		{"wrong credentials", base, []string{"HTTPS_PROXY=" + bad}, "", "could not be reached through your proxy: CONNECT registry.corp.test:" + r.Host[strings.LastIndex(r.Host, ":")+1:] + " denied: through your proxy " + shown + ": it answered 407 Proxy Authentication Required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := reachInstaller(t, r, tc.npmrc, append(tc.env, "NODE_EXTRA_CA_CERTS="+ca)...)
			var progress bytes.Buffer
			in.Progress = &progress
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			asked := len(px.Asked())
			tr, err := in.Install(ctx, Request{Extension: "hello", Server: "hello", Invocation: hello(t)})
			if strings.Contains(fmt.Sprint(err)+progress.String(), "pr0xy-secret") {
				t.Errorf("the proxy's password was shown:\n%v\n%s", err, progress.String())
			}
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("err = %v\nwant it to say %q\n%s", err, tc.fails, progress.String())
				}
				wantNothingKept(t, in, "hello")
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, progress.String())
			}
			if tr.Version != "1.0.0" || !slices.ContainsFunc(tr.Network, func(s string) bool { return strings.HasPrefix(s, tc.says) }) {
				t.Errorf("tree %s %s, Network %q: want it to say %q", tr.Package, tr.Version, tr.Network, tc.says)
			}
			if !strings.Contains(progress.String(), "(no network but the registry, "+tc.says) {
				t.Errorf("the progress does not name the proxy as it starts:\n%s", progress.String())
			}
			for _, h := range px.Asked()[asked:] {
				if h != r.Host {
					t.Errorf("the person's proxy was asked for %s", h)
				}
			}
			if len(px.Asked()) == asked {
				t.Error("the install did not go through the person's proxy")
			}
			wantTreeWithout(t, tr.Dir, []byte("pr0xy-secret"))
			wantTreeWithout(t, tr.Dir, r.CA[30:90])
		})
	}
}

// wantTreeWithout fails when a file of the tree dir holds b.
func wantTreeWithout(t *testing.T, dir string, b []byte) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if data, _ := os.ReadFile(p); d != nil && d.Type().IsRegular() && bytes.Contains(data, b) {
			t.Errorf("%s holds %q of the install's settings", p, b)
		}
		return nil
	})
}

// TestProxyAsNPM: the proxy the install reaches a registry through is
// the one npm itself would take, asked of npm's own code on this
// machine (@npmcli/agent's getProxy, given npm-registry-fetch's
// httpsProxy || proxy) for each way of setting it.
func TestProxyAsNPM(t *testing.T) {
	agent := npmModule(t, "@npmcli/agent/lib/proxy.js")
	for _, tc := range []struct {
		registry, npmrc string
		env             []string
	}{
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:3128"}},
		{"https://registry.npmjs.org/", "", []string{"HTTP_PROXY=http://a:3128"}},
		{"http://registry.corp/", "", []string{"HTTP_PROXY=http://a:3128"}},
		{"http://registry.corp/", "", []string{"PROXY=http://p:1"}},
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:1", "https_proxy=http://b:2"}},
		{"https://registry.npmjs.org/", "", []string{"https_proxy=http://b:2", "HTTPS_PROXY=http://a:1"}},
		{"https://registry.npmjs.org/", "https-proxy=http://c:3\n", []string{"HTTPS_PROXY=http://a:1"}},
		{"https://registry.npmjs.org/", "proxy=http://d:4\n", []string{"HTTPS_PROXY=http://a:1"}},
		{"https://registry.npmjs.org/", "proxy=false\n", []string{"HTTPS_PROXY=http://a:1"}},
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=npmjs.org"}},
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:1", "no_proxy=.npmjs.org, other"}},
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=registry.npmjs.org:443"}},
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=*"}},
		{"https://registry.npmjs.org/", "", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=pmjs.org"}},
		{"https://registry.npmjs.org/", "noproxy=npmjs.org\n", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=other"}},
		{"https://registry.npmjs.org/", "noproxy=other\n", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=npmjs.org"}},
		{"https://10.0.0.5:8443/", "", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=10.0.0.5"}},
		{"https://10.0.0.5:8443/", "", []string{"HTTPS_PROXY=http://a:1", "NO_PROXY=0.5"}},
		{"https://registry.npmjs.org/", "", nil},
	} {
		name := fmt.Sprintf("%s %q %q", tc.registry, tc.npmrc, tc.env)
		home := t.TempDir()
		writeTest(t, filepath.Join(home, ".npmrc"), "registry="+tc.registry+"\n"+tc.npmrc)
		environ := append([]string{"HOME=" + home}, tc.env...)
		c, err := readConfig(environ, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		u, _ := url.Parse(tc.registry)
		p, _, err := c.proxyFor(u)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := ""
		if p != nil {
			got = p.Scheme + "://" + p.Host
		}
		if want := npmProxy(t, agent, tc.registry, c.proxies, tc.env); got != want {
			t.Errorf("%s: the install goes through %q, npm through %q", name, got, want)
		}
	}
}

// npmModule is the path of a module of the npm of this machine.
func npmModule(t *testing.T, rel string) string {
	t.Helper()
	_, _, root, err := findNPM(envmap.Of(os.Environ()), nil)
	if err != nil {
		t.Fatalf("npm is needed here, as in CI (scripts/setup-and-test installs Node 20 and npm): %v", err)
	}
	p := filepath.Join(root, "node_modules", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npm's %s: %v", rel, err)
	}
	return p
}

// npmProxy is the proxy npm's code takes for the registry, with the
// proxy settings of the configuration and the variables env: "" for
// none.
func npmProxy(t *testing.T, agent, registry string, settings map[string]string, env []string) string {
	t.Helper()
	opts := map[string]any{"httpsProxy": nil, "proxy": nil, "noproxy": settings["noproxy"]}
	for _, k := range []string{"https-proxy", "proxy"} {
		if v := settings[k]; v != "" && v != "false" {
			opts[map[string]string{"https-proxy": "httpsProxy", "proxy": "proxy"}[k]] = v
		}
	}
	in, _ := json.Marshal(opts)
	script := `const {getProxy} = require(process.argv[1]); const o = JSON.parse(process.argv[3]);
const p = getProxy(process.argv[2], {proxy: o.httpsProxy || o.proxy, noProxy: o.noproxy});
process.stdout.write(p ? p.protocol + "//" + p.host : "");`
	cmd := execCommand("node")
	cmd.Args = []string{"node", "-e", script, agent, registry, string(in)}
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("npm's getProxy: %v", err)
	}
	return string(out)
}
