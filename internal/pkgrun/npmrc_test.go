package pkgrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gemkit/gemkit/internal/runnerline"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// TestReadConfig: the person's global npmrc, then their user npmrc, then
// their npm_config_ variables, as npm reads them; registries, their
// credentials (with ${VAR} from the environment) and TLS kept, the rest
// (scripts, proxies, prefixes) left out; a certificate file copied into
// the install's own configuration.
func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "usr")
	node := filepath.Join(prefix, "bin", "node")
	ca := filepath.Join(dir, "company-ca.pem")
	writeTest(t, ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	writeTest(t, filepath.Join(prefix, "etc", "npmrc"), "cafile = \""+ca+"\"\nregistry=https://global.example/\nprefix=/opt/x\n")
	home := filepath.Join(dir, "home")
	writeTest(t, filepath.Join(home, ".npmrc"), `; the person's
registry = https://mirror.example.com/npm
@acme:registry=https://npm.acme.example:8443/
//npm.acme.example:8443/:_authToken=${ACME_TOKEN}
//mirror.example.com/npm/:_auth="dXNlcjpwYXNz"
ignore-scripts=false
script-shell=/bin/evil
https-proxy=http://proxy.example:3128
[section]
fetch-retries=0
`)
	env := map[string]string{"HOME": home, "ACME_TOKEN": "acme-secret", "npm_config_fetch_timeout": "1000", "NPM_CONFIG_STRICT_SSL": "true", "npm_config_node_options": "--require=/tmp/x.js"}
	c, err := ReadConfig(env, node)
	if err != nil {
		t.Fatal(err)
	}
	if c.Registry != "https://mirror.example.com/npm/" || c.Scopes["@acme"] != "https://npm.acme.example:8443/" {
		t.Errorf("registries: %q %v", c.Registry, c.Scopes)
	}
	if got := c.Hosts(); !slices.Equal(got, []string{"mirror.example.com:443", "npm.acme.example:8443"}) {
		t.Errorf("Hosts = %q", got)
	}
	if c.RegistryFor("@acme/tool") != "https://npm.acme.example:8443/" || c.RegistryFor("@other/tool") != c.Registry || c.RegistryFor("plain") != c.Registry {
		t.Error("RegistryFor picks the wrong registry")
	}
	out := filepath.Join(dir, "conf")
	os.MkdirAll(out, 0o700)
	if err := c.write(out); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(out, "npmrc"))
	written := string(b)
	for _, want := range []string{`//npm.acme.example:8443/:_authToken="acme-secret"`, `//mirror.example.com/npm/:_auth="dXNlcjpwYXNz"`,
		`fetch-retries="0"`, `fetch-timeout="1000"`, `strict-ssl="true"`, `cafile="` + filepath.Join(out, "cafile.pem") + `"`} {
		if !strings.Contains(written, want) {
			t.Errorf("the install's npmrc lacks %s:\n%s", want, written)
		}
	}
	for _, not := range []string{"ignore-scripts", "script-shell", "proxy", "prefix", "node-options", "global.example"} {
		if strings.Contains(written, not) {
			t.Errorf("the install's npmrc keeps %s:\n%s", not, written)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "cafile.pem")); !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Error("the certificate file was not copied")
	}
	if fi, _ := os.Stat(filepath.Join(out, "npmrc")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the install's npmrc is %v, want 0600", fi.Mode().Perm())
	}
}

// TestReadConfigDefaults: with no npmrc at all, npm's registry; a
// userconfig the environment names replaces ~/.npmrc.
func TestReadConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	c, err := ReadConfig(map[string]string{"HOME": dir}, "/nonexistent/bin/node")
	if err != nil || c.Registry != DefaultRegistry || len(c.Sources) != 0 {
		t.Errorf("%+v %v", c, err)
	}
	writeTest(t, filepath.Join(dir, ".npmrc"), "registry=https://home.example/\n")
	writeTest(t, filepath.Join(dir, "other"), "registry=https://other.example/\n")
	c, err = ReadConfig(map[string]string{"HOME": dir, "NPM_CONFIG_USERCONFIG": filepath.Join(dir, "other")}, "")
	if err != nil || c.Registry != "https://other.example/" {
		t.Errorf("%+v %v", c, err)
	}
	c, err = ReadConfig(map[string]string{"HOME": dir, "npm_config_registry": "https://env.example"}, "")
	if err != nil || c.Registry != "https://env.example/" {
		t.Errorf("the environment's registry: %+v %v", c, err)
	}
}

// TestReadConfigErrors: what npm itself would fail on is said with the
// file and line, before anything is installed.
func TestReadConfigErrors(t *testing.T) {
	for _, tc := range []struct{ npmrc, want string }{
		{"//r.example/:_authToken=${UNSET_TOKEN}\n", "line 1: //r.example/:_authToken uses ${UNSET_TOKEN}, which is not set"},
		{"registry=ftp://x.example/\n", `the registry "ftp://x.example/" is not an http or https URL`},
		{"cafile=relative.pem\n", "is not an absolute path"},
		{"cafile=/nonexistent/ca.pem\n", "cafile /nonexistent/ca.pem"},
	} {
		dir := t.TempDir()
		writeTest(t, filepath.Join(dir, ".npmrc"), tc.npmrc)
		_, err := ReadConfig(map[string]string{"HOME": dir}, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.npmrc, err, tc.want)
		}
	}
	// ${VAR?} is empty when unset, as in npm.
	dir := t.TempDir()
	writeTest(t, filepath.Join(dir, ".npmrc"), "//r.example/:_authToken=${UNSET_TOKEN?}\n")
	if _, err := ReadConfig(map[string]string{"HOME": dir}, ""); err != nil {
		t.Errorf("${VAR?}: %v", err)
	}
}

func writeTest(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFailureWords: npm's failure is said by what the person can act
// on: a refusal of the registry itself (a name resolving to a private
// address) apart from one of another host, then npm's codes.
func TestFailureWords(t *testing.T) {
	inv := runnerline.Invocation{Runner: "npx", Ecosystem: runnerline.NPM, Package: "p"}
	hosts := []string{"registry.example:443", "203.0.113.80:443"}
	for _, tc := range []struct {
		npm     string
		denied  []netproxy.Denial
		network []string
		want    string
	}{
		{"npm error code E403\n", []netproxy.Denial{{Method: "CONNECT", Host: "registry.example", Port: 443, Reason: "registry.example resolves to the private address 203.0.113.80"}}, nil,
			"refused the install the registry of your npm configuration itself (https://registry.example/): CONNECT registry.example:443 denied"},
		{"npm error code E403\n", []netproxy.Denial{{Method: "CONNECT", Host: "cdn.example", Port: 443, Reason: NotAllowedWords}}, nil,
			"a connection to what is not the registry of your npm configuration (https://registry.example/): CONNECT cdn.example:443"},
		{"npm error code ETARGET\nnpm error notarget No matching version found for p@9.\n", nil, nil, "has no version of p that matches"},
		{"npm error code E401\n", nil, nil, "refused the install (E401): your npm configuration's credentials"},
		{"npm error code ECONNREFUSED\n", nil, nil, "could not be reached (ECONNREFUSED)"},
		{"npm error code EWHATEVER\n", nil, nil, "npm failed with EWHATEVER (exit status 1)"},
		{"", nil, nil, "npm failed (exit status 1)"},
		{"npm error code SELF_SIGNED_CERT_IN_CHAIN\n", nil, nil, "the certificate of the registry https://registry.example/ is not trusted (SELF_SIGNED_CERT_IN_CHAIN); the install trusted what your npx would: node's own authorities alone: NODE_EXTRA_CA_CERTS is not set, and your npm configuration names no cafile or ca"},
		{"npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY\n", nil, []string{"trusting the certificates in /etc/ca.pem (NODE_EXTRA_CA_CERTS)"}, "is not trusted (UNABLE_TO_GET_ISSUER_CERT_LOCALLY); the install trusted what your npx would: trusting the certificates in /etc/ca.pem (NODE_EXTRA_CA_CERTS)"},
		{"npm error code E502\n", []netproxy.Denial{{Method: "CONNECT", Host: "registry.example", Port: 443, Reason: netproxy.UpstreamReason + " http://proxy.example:3128: it answered 407 Proxy Authentication Required"}}, nil,
			"the registry of your npm configuration (https://registry.example/) could not be reached through your proxy: CONNECT registry.example:443 denied: through your proxy http://proxy.example:3128: it answered 407"},
	} {
		p := &progress{received: new(atomic.Int64)}
		p.Write([]byte(tc.npm))
		err := p.failure("p@latest", inv, "https://registry.example/", exitStatus1(t), tc.denied, hosts, tc.network)
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v:\n%v\nwant %q", tc.npm, tc.denied, err, tc.want)
		}
	}
}

// NotAllowedWords is the proxy's reason for a host not listed.
const NotAllowedWords = netproxy.NotAllowed

// exitStatus1 is the error of a process that exited 1.
func exitStatus1(t *testing.T) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit 1").Run()
	if err == nil {
		t.Fatal("sh exited 0")
	}
	return err
}

// TestReadConfigExtraCA: NODE_EXTRA_CA_CERTS is read as the person's
// own file, an absolute path only, and one that cannot be read is said
// rather than left out; a proxy npm would take that gemkit's install
// cannot go through is said too.
func TestReadConfigExtraCA(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	writeTest(t, ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"NODE_EXTRA_CA_CERTS=" + ca}, ""},
		{[]string{"NODE_EXTRA_CA_CERTS=ca.pem"}, `NODE_EXTRA_CA_CERTS "ca.pem" is not an absolute path`},
		{[]string{"NODE_EXTRA_CA_CERTS=" + dir + "/gone.pem"}, "NODE_EXTRA_CA_CERTS names " + dir + "/gone.pem, which cannot be read"},
		{[]string{"NODE_EXTRA_CA_CERTS=" + dir}, "NODE_EXTRA_CA_CERTS names " + dir + ", which cannot be read"},
		{[]string{"HTTPS_PROXY=socks5://u:p@127.0.0.1:1080"}, "is reached through the proxy socks5://127.0.0.1:1080 ($HTTPS_PROXY), a socks5:// proxy; gemkit's install reaches a registry through an http:// proxy only"},
		{[]string{"HTTPS_PROXY=u:secret@proxy:3128"}, "is not a URL; npm would fail the same way"},
	} {
		c, err := readConfig(append([]string{"HOME=" + dir}, tc.env...), "")
		if err == nil {
			_, err = c.routes()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v\nwant %q", tc.env, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%q: the error shows the proxy's password: %v", tc.env, err)
		}
	}
	c, _ := readConfig([]string{"HOME=" + dir, "NODE_EXTRA_CA_CERTS=" + ca}, "")
	out := filepath.Join(dir, "conf")
	os.MkdirAll(out, 0o700)
	if err := c.write(out); err != nil {
		t.Fatal(err)
	}
	env := c.nodeEnv(out)
	if len(env) != 1 || env[0] != "NODE_EXTRA_CA_CERTS="+filepath.Join(out, extraCAName) {
		t.Fatalf("nodeEnv = %q", env)
	}
	if b, _ := os.ReadFile(filepath.Join(out, extraCAName)); !strings.Contains(string(b), "MIIB") {
		t.Error("NODE_EXTRA_CA_CERTS's file was not copied")
	}
}
