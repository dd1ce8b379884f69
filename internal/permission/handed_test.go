//go:build unix

package permission

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gemkit/gemkit/internal/sandbox/sandboxtest"
)

// The genuine files of each kind, and the secret an attack would hand
// in their place: the person's SSH private key.
const (
	genuineADC  = `{"type": "authorized_user", "client_id": "c.apps.googleusercontent.com", "client_secret": "s", "refresh_token": "r"}`
	genuineAWS  = "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = s3cret\n"
	genuineKube = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://k.example.com}\n"
	sshKey      = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"
)

// handHome is a home folder with the person's SSH key and, at gcloud's
// own place, their genuine application default credentials; key is the
// SSH key's path.
func handHome(t *testing.T) (home, adc, key string) {
	t.Helper()
	home = t.TempDir()
	key = filepath.Join(home, ".ssh", "id_ed25519")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte(sshKey), 0o600)
	adc = filepath.Join(home, ".config", "gcloud", "application_default_credentials.json")
	os.MkdirAll(filepath.Dir(adc), 0o700)
	os.WriteFile(adc, []byte(genuineADC), 0o600)
	return home, adc, key
}

// otherFixture is a folder the root run of the tests made for the run
// as uid 65534 (TestHandCredentialsUnprivileged), holding what an
// unprivileged user cannot make: a file of another user's, a device.
func otherFixture(t *testing.T, name string) string {
	t.Helper()
	dir := fmt.Sprintf("/tmp/gemkit-handed-%s-%d", name, os.Getppid())
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("as uid %d, %s needs the folder the root run makes (TestHandCredentialsUnprivileged)", os.Getuid(), dir)
	}
	return dir
}

// replaceADC puts what make makes in place of gcloud's file: as root
// in the home itself, as another user by linking gcloud's folder (the
// person's layout, which is followed) to the root run's fixture.
func replaceADC(t *testing.T, home, adc, fixture string, make func(path string) error) {
	t.Helper()
	if os.Getuid() == 0 {
		os.Remove(adc)
		if err := make(adc); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Dir(adc)
	os.RemoveAll(dir)
	if err := os.Symlink(otherFixture(t, fixture), dir); err != nil {
		t.Fatal(err)
	}
}

// TestHandCredentialsRefused: what the switch hands is the file at the
// kind's own place, checked: every way of making it hand another file
// (the SSH key above all) is refused in words that name what and how
// to proceed, and the genuine file is handed, with its identity.
func TestHandCredentialsRefused(t *testing.T) {
	for _, c := range handAttacks {
		t.Run(c.name, func(t *testing.T) { testHandAttack(t, c.setup, c.want) })
	}
}

// handAttacks are TestHandCredentialsRefused's cases: each changes a
// home with genuine credentials (handHome) and gives the switch's
// environment; want is what the refusal says (nil: handed).
var handAttacks = []struct {
	name  string
	setup func(t *testing.T, home, adc, key string) map[string]string
	want  []string
}{
	{"genuine", func(*testing.T, string, string, string) map[string]string { return nil }, nil},
	{"a link inside gcloud's folder", func(t *testing.T, home, adc, key string) map[string]string {
		legacy := filepath.Join(filepath.Dir(adc), "legacy", "adc.json")
		os.MkdirAll(filepath.Dir(legacy), 0o700)
		os.Rename(adc, legacy)
		os.Symlink(filepath.Join("legacy", "adc.json"), adc)
		return nil
	}, nil},
	{"the variable naming the file itself, through a link", func(t *testing.T, home, adc, key string) map[string]string {
		os.Symlink(adc, filepath.Join(home, "adc-link.json"))
		return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": filepath.Join(home, "adc-link.json"), "CLOUDSDK_CONFIG": filepath.Dir(adc)}
	}, nil},
	{"XDG_CONFIG_HOME, which moves nothing of gcloud's", func(t *testing.T, home, adc, key string) map[string]string {
		other := filepath.Join(home, "xdg", "gcloud")
		os.MkdirAll(other, 0o700)
		os.Symlink(key, filepath.Join(other, adcName))
		return map[string]string{"XDG_CONFIG_HOME": filepath.Dir(other)}
	}, nil},
	{"GOOGLE_APPLICATION_CREDENTIALS naming the SSH key", func(t *testing.T, home, adc, key string) map[string]string {
		return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": key}
	}, []string{"$GOOGLE_APPLICATION_CREDENTIALS is set to \"" + "KEY" + "\", which is not ADC, the file gemkit hands", "Unset GOOGLE_APPLICATION_CREDENTIALS where gemkit and the agent run", "a workspace's .env", "or move your credentials to ADC"}},
	{"google_application_credentials, which the library reads too", func(t *testing.T, home, adc, key string) map[string]string {
		return map[string]string{"google_application_credentials": key}
	}, []string{"$google_application_credentials is set to"}},
	{"CLOUDSDK_CONFIG naming a folder whose file links to the key", func(t *testing.T, home, adc, key string) map[string]string {
		gc := filepath.Join(home, "gc")
		os.MkdirAll(gc, 0o700)
		os.Symlink(key, filepath.Join(gc, adcName))
		return map[string]string{"CLOUDSDK_CONFIG": gc}
	}, []string{"$CLOUDSDK_CONFIG is set to", "(HOME/gc/application_default_credentials.json)", "Unset CLOUDSDK_CONFIG"}},
	{"CLOUDSDK_CONFIG=/proc/self/cwd/gc, as a repository's .env sets it", func(t *testing.T, home, adc, key string) map[string]string {
		ws := filepath.Join(home, "repo")
		os.MkdirAll(filepath.Join(ws, "gc"), 0o755)
		os.Symlink(key, filepath.Join(ws, "gc", adcName))
		t.Chdir(ws)
		return map[string]string{"CLOUDSDK_CONFIG": "/proc/self/cwd/gc"}
	}, []string{`$CLOUDSDK_CONFIG is set to "/proc/self/cwd/gc"`}},
	{"GOOGLE_APPLICATION_CREDENTIALS=/proc/self/cwd/key.json", func(t *testing.T, home, adc, key string) map[string]string {
		ws := filepath.Join(home, "repo")
		os.MkdirAll(ws, 0o755)
		os.Symlink(key, filepath.Join(ws, "key.json"))
		t.Chdir(ws)
		return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/proc/self/cwd/key.json"}
	}, []string{`$GOOGLE_APPLICATION_CREDENTIALS is set to "/proc/self/cwd/key.json"`}},
	{"a relative variable", func(t *testing.T, home, adc, key string) map[string]string {
		return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "key.json"}
	}, []string{`$GOOGLE_APPLICATION_CREDENTIALS is set to "key.json"`}},
	{"a link out of ~/.config/gcloud", func(t *testing.T, home, adc, key string) map[string]string {
		os.Remove(adc)
		os.Symlink(key, adc)
		return nil
	}, []string{"ADC is a link out of HOME/.config/gcloud (a symbolic link to KEY, outside its folder", "gemkit hands only the file gcloud keeps there", "put the file gcloud keeps there in its place (`gcloud auth application-default login` writes it)"}},
	{"a relative link climbing out", func(t *testing.T, home, adc, key string) map[string]string {
		os.Remove(adc)
		os.Symlink("../../.ssh/id_ed25519", adc)
		return nil
	}, []string{"ADC is a link out of HOME/.config/gcloud"}},
	{"a FIFO in place of the file", func(t *testing.T, home, adc, key string) map[string]string {
		os.Remove(adc)
		if err := syscall.Mkfifo(adc, 0o600); err != nil {
			t.Fatal(err)
		}
		return nil
	}, []string{"ADC is not a regular file (a FIFO)"}},
	{"a socket in place of the file", func(t *testing.T, home, adc, key string) map[string]string {
		os.Remove(adc)
		// A socket's node, as bind makes one (the path is too long
		// to bind; mknod makes sockets for any user).
		if err := syscall.Mknod(adc, syscall.S_IFSOCK|0o600, 0); err != nil {
			t.Fatal(err)
		}
		return nil
	}, []string{"is not a regular file (a socket)"}},
	{"a device in place of the file", func(t *testing.T, home, adc, key string) map[string]string {
		replaceADC(t, home, adc, "device", func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3) })
		return nil
	}, []string{"is not a regular file (a device)"}},
	{"a folder in place of the file", func(t *testing.T, home, adc, key string) map[string]string {
		os.Remove(adc)
		os.Mkdir(adc, 0o700)
		return nil
	}, []string{"ADC is not a regular file (a folder)"}},
	{"a file of another user's", func(t *testing.T, home, adc, key string) map[string]string {
		replaceADC(t, home, adc, "owner", func(p string) error {
			os.WriteFile(p, []byte(genuineADC), 0o644)
			return os.Chown(p, 65534, 65534)
		})
		return nil
	}, []string{"belongs to uid", "not to you", "gemkit hands only your own files"}},
	{"the SSH key copied in place of the file", func(t *testing.T, home, adc, key string) map[string]string {
		os.WriteFile(adc, []byte(sshKey), 0o600)
		return nil
	}, []string{"ADC is not a JSON object, as application default credentials are", "`gcloud auth application-default login` writes it"}},
	{"JSON of another program's", func(t *testing.T, home, adc, key string) map[string]string {
		os.WriteFile(adc, []byte(`{"Type": "authorized_user", "token": "gh_x"}`), 0o600)
		return nil
	}, []string{`has no "type" Google's auth libraries take`}},
	{"none at all", func(t *testing.T, home, adc, key string) map[string]string {
		os.Remove(adc)
		return nil
	}, []string{"no gcloud credentials at ADC (`gcloud auth application-default login` writes it)"}},
}

// testHandAttack runs one of handAttacks.
func testHandAttack(t *testing.T, setup func(t *testing.T, home, adc, key string) map[string]string, want []string) {
	home, adc, key := handHome(t)
	env := setup(t, home, adc, key)
	files, err := HandCredentials("gcloud", home, func(k string) string { return env[k] })
	if want == nil {
		real, _ := filepath.EvalSymlinks(adc)
		if err != nil || len(files) != 1 || files[0].Source != real || files[0].Target != filepath.Join(".config", "gcloud", adcName) ||
			files[0].Identity.Size != int64(len(genuineADC)) || !strings.HasPrefix(files[0].Identity.Digest, "sha256:") {
			t.Fatalf("handed %+v, %v; want %s", files, err, real)
		}
		return
	}
	if err == nil {
		t.Fatalf("handed %+v", files)
	}
	for _, w := range want {
		w = strings.NewReplacer("ADC", adc, "KEY", key, "HOME", home).Replace(w)
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%v\nwant %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "BEGIN OPENSSH") {
		t.Errorf("the words quote the key: %v", err)
	}
}

// TestHandCredentialsKinds: aws and kube hand their own files, in their
// formats, and refuse a variable naming another (KUBECONFIG lists files:
// each must be the kind's own).
func TestHandCredentialsKinds(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
	os.MkdirAll(filepath.Join(home, ".kube"), 0o700)
	creds, config, kube := filepath.Join(home, ".aws", "credentials"), filepath.Join(home, ".aws", "config"), filepath.Join(home, ".kube", "config")
	os.WriteFile(creds, []byte(genuineAWS), 0o600)
	os.WriteFile(kube, []byte(genuineKube), 0o600)
	other := filepath.Join(home, "other")
	os.WriteFile(other, []byte(genuineAWS), 0o600)
	for _, c := range []struct {
		kind string
		env  map[string]string
		want []string // Sources handed, or the words of the refusal
	}{
		{"aws", nil, []string{creds}},
		{"aws", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": creds}, []string{creds}},
		{"aws", map[string]string{"AWS_SHARED_CREDENTIALS_FILE": other}, []string{"$AWS_SHARED_CREDENTIALS_FILE is set to", "Unset AWS_SHARED_CREDENTIALS_FILE"}},
		{"aws", map[string]string{"AWS_CONFIG_FILE": other}, []string{"$AWS_CONFIG_FILE is set to", "not " + config + ", the file gemkit hands"}},
		{"kube", nil, []string{kube}},
		{"kube", map[string]string{"KUBECONFIG": kube + string(filepath.ListSeparator)}, []string{kube}},
		{"kube", map[string]string{"KUBECONFIG": kube + string(filepath.ListSeparator) + other}, []string{"$KUBECONFIG is set to", "(" + other + ")"}},
	} {
		files, err := HandCredentials(c.kind, home, func(k string) string { return c.env[k] })
		var got []string
		for _, f := range files {
			got = append(got, f.Source)
		}
		if err == nil && strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s %v: handed %v, want %v", c.kind, c.env, got, c.want)
		}
		for _, w := range c.want {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: %v\nwant %q", c.kind, c.env, err, w)
			}
		}
	}
	os.WriteFile(config, []byte(sshKey), 0o600)
	if _, err := HandCredentials("aws", home, nil); err == nil || !strings.Contains(err.Error(), config+" is not an AWS credentials or config file") {
		t.Errorf("the SSH key as ~/.aws/config: %v", err)
	}
	os.WriteFile(kube, []byte(sshKey), 0o600)
	if _, err := HandCredentials("kube", home, nil); err == nil || !strings.Contains(err.Error(), kube+" is not a kubeconfig") {
		t.Errorf("the SSH key as ~/.kube/config: %v", err)
	}
	if _, err := HandCredentials("ssh", home, nil); err == nil || !strings.Contains(err.Error(), "ssh's credentials are not handed to an MCP server") {
		t.Errorf("ssh handed: %v", err)
	}
}

// TestCheckHandedSwapped: a file agreed to is handed at a start only
// while it is that file: each way of changing or replacing it after
// consent is refused in words, with what to do.
func TestCheckHandedSwapped(t *testing.T) {
	for _, c := range []struct {
		name string
		swap func(t *testing.T, home, adc, key string)
		want string
	}{
		{"unchanged", func(*testing.T, string, string, string) {}, ""},
		{"the SSH key linked in its place", func(t *testing.T, home, adc, key string) {
			os.Remove(adc)
			os.Symlink(key, adc)
		}, "was replaced by a symbolic link (to \"KEY\") since you agreed to hand it"},
		{"another file renamed over it", func(t *testing.T, home, adc, key string) {
			other := adc + ".new"
			os.WriteFile(other, []byte(genuineADC), 0o600)
			os.Rename(other, adc)
		}, "changed since you agreed to hand it (another file is there now)"},
		{"its bytes rewritten", func(t *testing.T, home, adc, key string) {
			os.WriteFile(adc, []byte(strings.Replace(genuineADC, `"r"`, `"x"`, 1)), 0o600)
		}, "changed since you agreed to hand it (its bytes changed)"},
		{"removed", func(t *testing.T, home, adc, key string) { os.Remove(adc) }, "is gone since you agreed to hand it"},
		{"a FIFO in its place", func(t *testing.T, home, adc, key string) {
			os.Remove(adc)
			syscall.Mkfifo(adc, 0o600)
		}, "is not a regular file (a FIFO)"},
		{"its folder replaced by a link", func(t *testing.T, home, adc, key string) {
			dir := filepath.Dir(adc)
			moved := dir + ".moved"
			os.Rename(dir, moved)
			os.Symlink(moved, dir)
		}, "is no longer reached without a link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, adc, key := handHome(t)
			files, err := HandCredentials("gcloud", home, nil)
			if err != nil || len(files) != 1 {
				t.Fatalf("%+v %v", files, err)
			}
			c.swap(t, home, adc, key)
			err = CheckHanded(files[0])
			switch {
			case c.want == "" && err != nil:
				t.Errorf("the file agreed to, unchanged: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(c.want, "KEY", key))):
				t.Errorf("%v\nwant %q", err, c.want)
			case c.want != "" && !strings.Contains(err.Error(), "agree to hand it as it is now"):
				t.Errorf("no way on: %v", err)
			}
			var ce *CredentialsError
			if c.want != "" && !errors.As(err, &ce) {
				t.Errorf("%T, want a *CredentialsError", err)
			}
		})
	}
}

// TestCredentialFormats: each kind's file is read as its libraries read
// it: the application default credentials as JSON.parse does (exact-case
// keys, the last duplicate winning, a "type" string fromJSON takes);
// AWS's INI files; a kubeconfig in YAML or JSON.
func TestCredentialFormats(t *testing.T) {
	for _, c := range []struct {
		check func([]byte) error
		in    string
		ok    bool
	}{
		{checkADC, genuineADC, true},
		{checkADC, `{"type": "service_account", "client_email": "a@b", "private_key": "k"}`, true},
		{checkADC, `{"type": "external_account"}`, true},
		{checkADC, `{"type": "x", "type": "impersonated_service_account"}`, true},
		{checkADC, `{"type": "authorized_user", "type": "x"}`, false},
		{checkADC, `{"Type": "authorized_user"}`, false},
		{checkADC, `{"type": ["authorized_user"]}`, false},
		{checkADC, `["authorized_user"]`, false},
		{checkADC, sshKey, false},
		{checkADC, "", false},
		{checkAWS, genuineAWS, true},
		{checkAWS, "# mine\n[profile dev]\nregion = eu-west-1\ns3 =\n  max_concurrent_requests = 20\n; end\n", true},
		{checkAWS, "aws_access_key_id = A\n[default]\n", false},
		{checkAWS, "[default]\n  indented = before any key\n", false},
		{checkAWS, sshKey, false},
		{checkAWS, "", false},
		{checkKubeconfig, genuineKube, true},
		{checkKubeconfig, `{"apiVersion": "v1", "kind": "Config", "clusters": []}`, true},
		{checkKubeconfig, "users:\n- name: u\n", true},
		{checkKubeconfig, "kind: Pod\n", false},
		{checkKubeconfig, "just a string\n", false},
		{checkKubeconfig, sshKey, false},
	} {
		if err := c.check([]byte(c.in)); (err == nil) != c.ok {
			t.Errorf("%.40q: %v, want ok %v", c.in, err, c.ok)
		}
	}
}

// TestHandCredentialsUnprivileged runs the tests above as uid 65534,
// where the sandbox runs too: the root run makes what that user cannot
// (a file of another user's, a device) in folders of their own.
func TestHandCredentialsUnprivileged(t *testing.T) {
	if os.Getuid() == 0 {
		for name, make := range map[string]func(string) error{
			"owner": func(p string) error {
				return os.WriteFile(p, []byte(genuineADC), 0o644)
			},
			"device": func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3) },
		} {
			dir := fmt.Sprintf("/tmp/gemkit-handed-%s-%d", name, os.Getpid())
			os.MkdirAll(dir, 0o755)
			os.Chmod(dir, 0o755)
			defer os.RemoveAll(dir)
			if err := make(filepath.Join(dir, adcName)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sandboxtest.RerunUnprivileged(t, "^Test(HandCredentialsRefused|HandCredentialsKinds|CheckHandedSwapped)$")
}
