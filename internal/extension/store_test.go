package extension

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// gitRepo makes a repository holding files and returns its folder and
// file:// URL.
func gitRepo(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gemkittest.Git(t, dir, "init", "--quiet")
	commitFiles(t, dir, files, "first")
	return dir, "file://" + dir
}

func commitFiles(t *testing.T, dir string, files map[string]string, msg string) string {
	t.Helper()
	writeTree(t, dir, files)
	gemkittest.Git(t, dir, "add", "-A")
	gemkittest.Git(t, dir, "commit", "--quiet", "-m", msg)
	return gemkittest.Git(t, dir, "rev-parse", "HEAD")
}

func manifestJSON(name, version string, extra string) string {
	s := `{"name":"` + name + `","version":"` + version + `"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const toolJSON = `"permissions":{"filesystem":{"read":"workspace"}},"tools":[{"name":"hello","description":"Says hello.","executable":"tools/hello.sh","runtime":"shell","args":[{"name":"who","type":"string"}]}]`

func yes(context.Context, ConsentPrompt) (bool, error) { return true, nil }

func newStore(t *testing.T) *Store {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "projects", "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return OpenStore(home).WithWorkspace(ws)
}

// entries lists the extensions folder, so tests can check that nothing
// (not even a staging folder) is left behind.
func entries(t *testing.T, s *Store) []string {
	t.Helper()
	des, err := os.ReadDir(s.Dir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

func TestInstallFromGitRefs(t *testing.T) {
	if testing.Short() {
		t.Skip("clones and installs with the real git for seconds: runs without -short, as in CI")
	}
	repo, url := gitRepo(t, map[string]string{ManifestFile: manifestJSON("greeter", "1.0.0", toolJSON), "tools/hello.sh": "echo hello"})
	v1 := gemkittest.Git(t, repo, "rev-parse", "HEAD")
	gemkittest.Git(t, repo, "tag", "v1.0.0")
	commitFiles(t, repo, map[string]string{ManifestFile: manifestJSON("greeter", "1.1.0", toolJSON)}, "v1.1")
	gemkittest.Git(t, repo, "checkout", "--quiet", "-b", "beta")
	commitFiles(t, repo, map[string]string{ManifestFile: manifestJSON("greeter", "2.0.0-beta", toolJSON)}, "beta")
	gemkittest.Git(t, repo, "checkout", "--quiet", "main")

	for _, tc := range []struct{ ref, want string }{
		{"", "1.1.0"}, {"v1.0.0", "1.0.0"}, {"beta", "2.0.0-beta"}, {v1, "1.0.0"}, {v1[:12], "1.0.0"},
	} {
		s := newStore(t)
		in, err := s.Install(context.Background(), InstallRequest{Source: url, Ref: tc.ref, Consent: yes})
		if err != nil {
			t.Fatalf("ref %q: %v", tc.ref, err)
		}
		if got := in.Manifest().Version; got != tc.want {
			t.Errorf("ref %q installed %s, want %s", tc.ref, got, tc.want)
		}
		if in.Metadata == nil || in.Metadata.Type != SourceGit || in.Metadata.Source != url || in.Metadata.Ref != tc.ref {
			t.Errorf("ref %q: metadata %+v", tc.ref, in.Metadata)
		}
		if got := entries(t, s); !reflect.DeepEqual(got, []string{"greeter"}) {
			t.Errorf("extensions folder holds %v, want only greeter", got)
		}
		if !s.ConsentGranted("greeter", PermissionsHash(in.Manifest())) {
			t.Errorf("install consent was not recorded")
		}
	}

	s := newStore(t)
	_, err := s.Install(context.Background(), InstallRequest{Source: url, Ref: "no-such-ref", Consent: yes})
	if err == nil || !strings.Contains(err.Error(), "no-such-ref") {
		t.Errorf("bad ref: %v", err)
	}
	// A ref that could be a commit but is none gets a plain answer, not
	// git's complaint about checkout arguments.
	_, err = s.Install(context.Background(), InstallRequest{Source: url, Ref: "deadbeef", Consent: yes})
	if err == nil || err.Error() != url+` has no branch, tag or commit "deadbeef"` {
		t.Errorf("missing commit: %v", err)
	}
	if got := entries(t, s); len(got) != 0 {
		t.Errorf("a failed install left %v", got)
	}
}

func TestGitErrorLines(t *testing.T) {
	stderr := "Cloning into 'x'...\nremote: Counting objects: 3\rremote: Counting objects: 100% (3/3), done.\nfatal: repository 'x' not found\n"
	if got := gitErrorLines(stderr); got != "fatal: repository 'x' not found" {
		t.Errorf("gitErrorLines = %q", got)
	}
	if got := gitErrorLines("something odd\n"); got != "something odd" {
		t.Errorf("gitErrorLines without fatal = %q", got)
	}
}

func TestInstallMetadataFileFormat(t *testing.T) {
	_, url := gitRepo(t, map[string]string{ManifestFile: manifestJSON("fmt", "1.0.0", "")})
	s := newStore(t)
	if _, err := s.Install(context.Background(), InstallRequest{Source: url, Ref: "main", Consent: yes}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.Dir(), "fmt", InstallMetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"source": url, "type": "git", "ref": "main"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %s, want Gemini CLI's shape %v", InstallMetadataFile, data, want)
	}
}

func TestInstallSubfolderManifest(t *testing.T) {
	_, url := gitRepo(t, map[string]string{
		"README.md":                      "monorepo",
		"packages/ext/" + ManifestFile:   manifestJSON("sub", "0.1.0", toolJSON),
		"packages/ext/tools/hello.sh":    "echo hi",
		"packages/other/" + ManifestFile: manifestJSON("other", "0.1.0", ""),
	})
	s := newStore(t)
	if _, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: yes}); err == nil {
		t.Fatal("installing a repository without a top-level manifest must fail")
	}
	in, err := s.Install(context.Background(), InstallRequest{Source: url, Subdir: "packages/ext", Consent: yes})
	if err != nil {
		t.Fatal(err)
	}
	if in.Manifest().Name != "sub" || in.Metadata.Subdir != "packages/ext" {
		t.Errorf("installed %s with %+v", in.Manifest().Name, in.Metadata)
	}
	if _, err := os.Stat(filepath.Join(in.Entry, "README.md")); err == nil {
		t.Errorf("files outside --path were installed")
	}
	if _, err := s.Install(context.Background(), InstallRequest{Source: url, Subdir: "../x", Consent: yes}); err == nil {
		t.Errorf("--path escaping the source must be refused")
	}
}

// TestRefusedManifestDoesNotInstall: a manifest Gemini CLI refuses too
// (a name it cannot take) is refused before consent is asked, in the
// words of the manifest in the source; one whose only problems are in
// gemkit's own fields (a tool's runtime and script) installs, as in
// Gemini CLI, and says that its tools do not run.
func TestRefusedManifestDoesNotInstall(t *testing.T) {
	_, url := gitRepo(t, map[string]string{ManifestFile: manifestJSON("broken name", "1.0.0",
		`"tools":[{"name":"t","description":"d","executable":"tools/missing.py","runtime":"perl"}]`)})
	s := newStore(t)
	asked := false
	_, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: func(context.Context, ConsentPrompt) (bool, error) {
		asked = true
		return true, nil
	}})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 || ve.Problems[0].Path != "name" {
		t.Fatalf("err = %v, want a ValidationError with the name's problem only", err)
	}
	if asked {
		t.Errorf("consent was asked for an extension Gemini CLI refuses")
	}
	if strings.Contains(err.Error(), stagingPrefix) || !strings.Contains(err.Error(), ManifestFile+" in "+url+" has 1 problem that Gemini CLI refuses too") {
		t.Errorf("the error should name the manifest in the source, not the staging copy: %v", err)
	}
	if got := entries(t, s); len(got) != 0 {
		t.Errorf("a refused install left %v in the extensions folder", got)
	}

	_, url = gitRepo(t, map[string]string{ManifestFile: manifestJSON("broken-tools", "1.0.0",
		`"tools":[{"name":"t","description":"d","executable":"tools/missing.py","runtime":"perl"}]`)})
	in, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: yes})
	if err != nil {
		t.Fatalf("an extension whose only problems are its gemkit tools' was refused: %v", err)
	}
	if !errors.As(in.Err, &ve) || ve.Refuses() || len(ve.Problems) != 2 || !strings.Contains(ve.Error(), "gemkit does not run the extension's own tools") {
		t.Errorf("the installed extension's Err = %v, want its two tool problems, which stop its tools", in.Err)
	}
	must(t, s.Uninstall("broken-tools"))

	// Link and update alike: a local folder with tool problems links,
	// updates to another version with tool problems, and is refused an
	// update to a version Gemini CLI refuses, which changes nothing.
	src := filepath.Join(t.TempDir(), "linked-tools")
	broken := `"tools":[{"name":"t","description":"d","executable":"tools/missing.py","runtime":"perl"}]`
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("linked-tools", "1.0.0", broken)})
	if _, err := s.Link(context.Background(), src, yes); err != nil {
		t.Errorf("link of an extension whose only problems are its gemkit tools': %v", err)
	}
	tools := filepath.Join(t.TempDir(), "local-tools")
	writeTree(t, tools, map[string]string{ManifestFile: manifestJSON("local-tools", "1.0.0", broken)})
	_, err = s.Install(context.Background(), InstallRequest{Source: tools, Consent: yes})
	must(t, err)
	writeTree(t, tools, map[string]string{ManifestFile: manifestJSON("local-tools", "1.1.0", broken)})
	if res, err := s.Update(context.Background(), "local-tools", UpdateRequest{Consent: yes}); err != nil || res.NewVersion != "1.1.0" {
		t.Errorf("update to a version with tool problems: %+v, %v", res, err)
	}
	writeTree(t, tools, map[string]string{ManifestFile: `{"name":"local-tools"}`})
	if _, err := s.Update(context.Background(), "local-tools", UpdateRequest{Consent: yes}); !errors.As(err, &ve) || !ve.Refuses() {
		t.Errorf("update to a version without a version: %v, want it refused", err)
	}
	if cur, _ := s.Get("local-tools"); cur.Manifest().Version != "1.1.0" {
		t.Errorf("a refused update changed the extension to %q", cur.Manifest().Version)
	}
	must(t, s.Uninstall("local-tools"))
	must(t, s.Uninstall("linked-tools"))

	// A repository without a manifest at its top: the error says to name
	// the sub-folder (the command adds its flag, --path).
	_, bare := gitRepo(t, map[string]string{"ext/" + ManifestFile: manifestJSON("deep", "1.0.0", "")})
	_, err = s.Install(context.Background(), InstallRequest{Source: bare, Consent: yes})
	var re *RequestError
	if !errors.As(err, &re) || re.Field != "Subdir" || !strings.Contains(err.Error(), bare+" has no "+ManifestFile) || !strings.Contains(err.Error(), "name that folder") || strings.Contains(err.Error(), stagingPrefix) {
		t.Errorf("install of a repository with the manifest in a sub-folder: %v", err)
	}
	// And a local folder's broken manifest is named by its own path.
	local := t.TempDir()
	os.WriteFile(filepath.Join(local, ManifestFile), []byte(`{"name": "x",`), 0o644)
	_, err = s.Install(context.Background(), InstallRequest{Source: local, Consent: yes})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(local, ManifestFile)+": not valid JSON at line 1") {
		t.Errorf("install of a local folder with broken JSON: %v", err)
	}
	if got := entries(t, s); len(got) != 0 {
		t.Errorf("failed installs left %v in the extensions folder", got)
	}
	if list, _ := s.List(); len(list) != 0 {
		t.Errorf("List shows %d extensions", len(list))
	}
}

func TestConsentRefusedLeavesNothing(t *testing.T) {
	_, url := gitRepo(t, map[string]string{ManifestFile: manifestJSON("nope", "1.0.0", toolJSON), "tools/hello.sh": "echo"})
	s := newStore(t)
	var prompt ConsentPrompt
	_, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: func(_ context.Context, p ConsentPrompt) (bool, error) {
		prompt = p
		return false, nil
	}})
	if !errors.Is(err, ErrConsentRefused) {
		t.Fatalf("err = %v, want ErrConsentRefused", err)
	}
	text := strings.Join(prompt.Lines, "\n")
	for _, want := range []string{"read files in your workspace", "no network access", "hello(who: string)", "tools/hello.sh"} {
		if !strings.Contains(text, want) {
			t.Errorf("consent text lacks %q:\n%s", want, text)
		}
	}
	if got := entries(t, s); len(got) != 0 {
		t.Errorf("refused install left %v", got)
	}
	if _, err := s.Install(context.Background(), InstallRequest{Source: url}); !errors.Is(err, ErrConsentRefused) {
		t.Errorf("nil consent func: %v, want ErrConsentRefused", err)
	}
}

func TestInstallLocalFolder(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("local", "1.0.0", toolJSON), "tools/hello.sh": "echo", "tools/link": "->hello.sh"})
	if err := os.Chmod(filepath.Join(src, "tools/hello.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	if _, err := s.Install(context.Background(), InstallRequest{Source: src, Ref: "main", Consent: yes}); err == nil {
		t.Errorf("--ref on a local folder must be refused")
	}
	var progress strings.Builder
	in, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Copying " + src + " …\nCopied 2 files (" + byteSize(int64(len(manifestJSON("local", "1.0.0", toolJSON))+len("echo"))) + ").\n"; progress.String() != want {
		t.Errorf("progress = %q, want %q", progress.String(), want)
	}
	if in.Metadata.Type != SourceLocal || in.Metadata.Source != src {
		t.Errorf("metadata %+v", in.Metadata)
	}
	fi, err := os.Stat(filepath.Join(in.Entry, "tools/hello.sh"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("copied script: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(in.Entry, "tools/link")); err != nil || target != "hello.sh" {
		t.Errorf("symlink copied as %q, %v", target, err)
	}
	writeTree(t, src, map[string]string{"extra.txt": "later"})
	if _, err := os.Stat(filepath.Join(in.Entry, "extra.txt")); err == nil {
		t.Errorf("an installed copy must not follow its source")
	}
	_, err = s.Install(context.Background(), InstallRequest{Source: src, Consent: yes})
	if err == nil || !strings.Contains(err.Error(), "already installed") {
		t.Errorf("second install: %v", err)
	}
	if _, err := s.Install(context.Background(), InstallRequest{Source: filepath.Join(src, "nope"), Consent: yes}); err == nil {
		t.Errorf("missing folder must fail")
	}
}

// TestInstallLinksOut: a link that leads out of the folder is copied as
// it is, and the progress says so, and what it means for the sandbox;
// links that stay inside are not named.
func TestInstallLinksOut(t *testing.T) {
	for _, c := range []struct {
		name  string
		links map[string]string
		want  string
	}{
		{name: "inside", links: map[string]string{"a/link": "->../tools.sh", "b": "->a"}},
		{name: "absolute", links: map[string]string{"node_modules": "->/opt/shared/node_modules"},
			want: "Kept 1 symbolic link leading out of the folder as it is: node_modules -> /opt/shared/node_modules. Gemini CLI follows such links; gemkit's sandbox does not, so a server or tool of the extension that needs what they lead to does not find it there: install from a folder that holds a copy instead (cp -rL).\n"},
		{name: "climbing", links: map[string]string{"lib/up": "->../../elsewhere", "lib/x": "->../.."},
			want: "Kept 2 symbolic links leading out of the folder as they are: lib/up -> ../../elsewhere, lib/x -> ../... Gemini CLI"},
		// x stays in the folder by its words, but lib, which it goes
		// through, leads out.
		{name: "through another link", links: map[string]string{"lib": "->/opt/lib", "x": "->lib/y"},
			want: "Kept 2 symbolic links leading out of the folder as they are: lib -> /opt/lib, x -> lib/y. Gemini CLI"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "ext")
			files := map[string]string{ManifestFile: manifestJSON("local", "1.0.0", ""), "tools.sh": "echo"}
			for k, v := range c.links {
				files[k] = v
			}
			writeTree(t, src, files)
			var progress strings.Builder
			if _, err := newStore(t).Install(context.Background(), InstallRequest{Source: src, Consent: yes, Progress: &progress}); err != nil {
				t.Fatal(err)
			}
			got := progress.String()
			if c.want == "" && strings.Contains(got, "Kept") || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("progress:\n%s\nwant: %q", got, c.want)
			}
		})
	}
}

func TestLinkPointsAtRealPath(t *testing.T) {
	base := t.TempDir()
	dev := filepath.Join(base, "dev", "my-ext")
	writeTree(t, dev, map[string]string{ManifestFile: manifestJSON("linked", "0.1.0",
		`"mcpServers":{"srv":{"command":"node","args":["${extensionPath}${/}server.js"]}}`)})
	alias := filepath.Join(base, "alias")
	if err := os.Symlink(filepath.Join(base, "dev"), alias); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	in, err := s.Link(context.Background(), filepath.Join(alias, "my-ext"), yes)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dev)
	if in.Extension.Dir != real || in.Metadata.Type != SourceLink || in.Metadata.Source != real {
		t.Errorf("Dir %s, metadata %+v; want the real path %s", in.Extension.Dir, in.Metadata, real)
	}
	if got := MCPServerSummary(in.Manifest().MCPServers["srv"]); got != "local: node "+filepath.Join(real, "server.js") {
		t.Errorf("${extensionPath} in a linked extension: %s", got)
	}
	// The entry holds only the metadata; edits in the folder show at once.
	if got, _ := os.ReadDir(in.Entry); len(got) != 1 {
		t.Errorf("link entry holds %d files, want 1", len(got))
	}
	writeTree(t, dev, map[string]string{ManifestFile: manifestJSON("linked", "0.2.0", "")})
	if again, _ := s.Get("linked"); again.Manifest().Version != "0.2.0" {
		t.Errorf("edit not seen through the link: %s", again.Manifest().Version)
	}
	res, err := s.Update(context.Background(), "linked", UpdateRequest{})
	if err != nil || !res.Linked {
		t.Errorf("update of a link: %+v %v", res, err)
	}
	if err := s.Uninstall("linked"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dev, ManifestFile)); err != nil {
		t.Errorf("uninstalling a link touched its source: %v", err)
	}
	for _, g := range entries(t, s) {
		if g != EnablementFile { // only Gemini CLI's enablement file may remain
			t.Errorf("left behind: %s", g)
		}
	}
}

func TestSymlinkedEntryMadeByHand(t *testing.T) {
	dev := t.TempDir()
	writeTree(t, dev, map[string]string{ManifestFile: manifestJSON("byhand", "1.0.0", "")})
	s := newStore(t)
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dev, filepath.Join(s.Dir(), "byhand")); err != nil {
		t.Fatal(err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Manifest() == nil || list[0].Metadata != nil {
		t.Fatalf("List = %v, %v", list, err)
	}
	// ${extensionPath} is where the link leads, not the link: List
	// resolves an entry the listing gave as a link, and only takes the
	// others for folders.
	if realDev, _ := filepath.EvalSymlinks(dev); list[0].Extension.Dir != realDev {
		t.Errorf("Dir = %s, want %s", list[0].Extension.Dir, realDev)
	}
	if err := s.Uninstall("byhand"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dev, ManifestFile)); err != nil {
		t.Errorf("uninstall followed the symlink: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(s.Dir(), "byhand")); err == nil {
		t.Errorf("symlink still there")
	}
}

func installLocal(t *testing.T, s *Store, name string) {
	t.Helper()
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON(name, "1.0.0", "")})
	if _, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
		t.Fatal(err)
	}
}

func TestEnablementScopes(t *testing.T) {
	s := newStore(t)
	installLocal(t, s, "ext")
	check := func(step string, user, ws bool) {
		t.Helper()
		e, err := s.Enablement("ext")
		if err != nil {
			t.Fatal(err)
		}
		if e.User != user || e.Workspace != ws {
			t.Errorf("%s: user %v workspace %v, want %v %v", step, e.User, e.Workspace, user, ws)
		}
		if s.IsEnabled("ext") != ws {
			t.Errorf("%s: IsEnabled disagrees with the workspace scope", step)
		}
	}
	check("default", true, true)
	must(t, s.Disable("ext", ScopeUser))
	check("disable user", false, false)
	must(t, s.Enable("ext", ScopeWorkspace))
	check("enable workspace", false, true)
	must(t, s.Disable("ext", ScopeUser))
	check("disable user again: workspace still overrides", false, true)
	must(t, s.Enable("ext", ScopeUser))
	check("enable user", true, true)
	must(t, s.Disable("ext", ScopeWorkspace))
	check("disable workspace", true, false)

	// The file is Gemini CLI's: name → overrides, folder rules with
	// slashes, "!" to disable and "*" for sub-folders, in an order where
	// Gemini CLI's own "last match wins" gives the same answers.
	data, err := os.ReadFile(filepath.Join(s.Dir(), EnablementFile))
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]struct{ Overrides []string }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	want := []string{s.Home() + "/*", "!" + s.Workspace() + "/*"}
	if !reflect.DeepEqual(f["ext"].Overrides, want) {
		t.Errorf("overrides = %q, want %q", f["ext"].Overrides, want)
	}

	// Another store view in a different workspace under home follows the
	// user rule.
	other := filepath.Join(s.Home(), "elsewhere")
	must(t, os.MkdirAll(other, 0o755))
	if !s.WithWorkspace(other).IsEnabled("ext") {
		t.Errorf("a workspace without its own rule must follow the user rule")
	}
	if err := s.Enable("missing", ScopeUser); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("enable of a missing extension: %v", err)
	}
	if _, err := ParseScope("system"); err == nil {
		t.Errorf("ParseScope accepted system")
	}
}

func TestEnablementReadsGeminiCLIFile(t *testing.T) {
	s := newStore(t)
	installLocal(t, s, "a")
	ws := s.Workspace()
	// Rules as Gemini CLI writes them: last match wins.
	file := map[string]any{"a": map[string]any{"overrides": []string{"!" + s.Home() + "/*", ws + "/*"}}}
	data, _ := json.Marshal(file)
	must(t, os.WriteFile(filepath.Join(s.Dir(), EnablementFile), data, 0o644))
	e, err := s.Enablement("a")
	if err != nil || e.User || !e.Workspace {
		t.Errorf("Enablement = %+v %v, want user off, workspace on", e, err)
	}
	// A rule without "*" matches the folder itself only.
	file = map[string]any{"a": map[string]any{"overrides": []string{"!" + filepath.Dir(ws) + "/"}}}
	data, _ = json.Marshal(file)
	must(t, os.WriteFile(filepath.Join(s.Dir(), EnablementFile), data, 0o644))
	if e, _ := s.Enablement("a"); !e.Workspace {
		t.Errorf("a rule without * must not cover sub-folders")
	}
	must(t, os.WriteFile(filepath.Join(s.Dir(), EnablementFile), []byte("{oops"), 0o644))
	if _, err := s.Enablement("a"); err == nil {
		t.Errorf("a damaged enablement file must be reported")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("clones and installs with the real git for seconds: runs without -short, as in CI")
	}
	repo, url := gitRepo(t, map[string]string{ManifestFile: manifestJSON("upd", "1.0.0", toolJSON), "tools/hello.sh": "echo 1"})
	s := newStore(t)
	in, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: yes})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(in.Entry, ".env"), []byte("TOKEN=x\n"), 0o600))
	mustNotAsk := func(context.Context, ConsentPrompt) (bool, error) {
		t.Error("consent asked although nothing changed")
		return false, nil
	}

	res, err := s.Update(context.Background(), "upd", UpdateRequest{Consent: mustNotAsk})
	must(t, err)
	if !res.UpToDate || res.OldVersion != "1.0.0" {
		t.Errorf("nothing new: %+v", res)
	}

	// A new version with the same permissions, tools and MCP servers but
	// new code asks too, naming the files, and a no changes nothing.
	commitFiles(t, repo, map[string]string{ManifestFile: manifestJSON("upd", "1.1.0", toolJSON), "tools/hello.sh": "echo 1.1"}, "v1.1")
	var asked ConsentPrompt
	_, err = s.Update(context.Background(), "upd", UpdateRequest{Consent: func(_ context.Context, p ConsentPrompt) (bool, error) {
		asked = p
		return false, nil
	}})
	if !errors.Is(err, ErrConsentRefused) {
		t.Fatalf("an update of the code without consent: %v", err)
	}
	if text := strings.Join(asked.Lines, "\n"); !strings.Contains(text, "files: "+ManifestFile+" (changed), tools/hello.sh (changed)") ||
		!strings.Contains(text, "The new files are in ") {
		t.Errorf("the question of an update of the code does not name the files:\n%s", text)
	}
	if cur, _ := s.Get("upd"); cur.Manifest().Version != "1.0.0" {
		t.Errorf("a refused update of the code replaced the extension with %s", cur.Manifest().Version)
	}
	res, err = s.Update(context.Background(), "upd", UpdateRequest{Consent: yes})
	must(t, err)
	if res.UpToDate || res.OldVersion != "1.0.0" || res.NewVersion != "1.1.0" || len(res.Changes) != 1 || res.Changes[0].Area != "files" {
		t.Errorf("update without permission changes: %+v", res)
	}
	cur, _ := s.Get("upd")
	st, err := s.Consent(cur.Extension)
	must(t, err)
	if !st.Granted {
		t.Errorf("the consent to the new code was not recorded: %+v", st)
	}
	// Nothing new: no question, and the record stays as it was, with the
	// time consent to this code was given.
	before, err := os.ReadFile(s.consentPath())
	must(t, err)
	if res, err := s.Update(context.Background(), "upd", UpdateRequest{Consent: mustNotAsk}); err != nil || !res.UpToDate {
		t.Fatalf("update with nothing new: %+v, %v", res, err)
	}
	if after, _ := os.ReadFile(s.consentPath()); !bytes.Equal(before, after) {
		t.Errorf("an update that changed nothing rewrote the consent record:\n%s\n%s", before, after)
	}
	if data, _ := os.ReadFile(filepath.Join(in.Entry, ".env")); string(data) != "TOKEN=x\n" {
		t.Errorf(".env settings lost in the update: %q", data)
	}

	updateAsksForMore(t, s, repo)

	// A broken new version does not replace the working one.
	commitFiles(t, repo, map[string]string{ManifestFile: `{"name":"upd","version":"3"`}, "broken")
	if _, err := s.Update(context.Background(), "upd", UpdateRequest{Consent: yes}); err == nil {
		t.Errorf("updating to a broken manifest must fail")
	}
	if cur, _ := s.Get("upd"); cur.Manifest().Version != "2.0.0" {
		t.Errorf("broken update changed the installed version to %s", cur.Manifest().Version)
	}
}

// updateAsksForMore commits to repo a version of the installed "upd" that
// asks for more permissions, tools and servers: a refused update keeps
// the old one, and the question names each of them.
func updateAsksForMore(t *testing.T, s *Store, repo string) {
	t.Helper()
	// A version that asks for more.
	more := `"permissions":{"filesystem":{"read":"workspace"},"network":{"allowedHosts":["api.example.com"]}},` +
		`"tools":[{"name":"hello","description":"Says hello.","executable":"tools/hello.sh","runtime":"shell","args":[{"name":"who","type":"string"}]},` +
		`{"name":"fetch","description":"Fetches.","executable":"tools/hello.sh","runtime":"shell"}],"mcpServers":{"m":{"command":"node"}}`
	commitFiles(t, repo, map[string]string{ManifestFile: manifestJSON("upd", "2.0.0", more)}, "v2")
	var shown ConsentPrompt
	_, err := s.Update(context.Background(), "upd", UpdateRequest{Consent: func(_ context.Context, p ConsentPrompt) (bool, error) {
		shown = p
		return false, nil
	}})
	if !errors.Is(err, ErrConsentRefused) {
		t.Fatalf("refused update: %v", err)
	}
	if cur, _ := s.Get("upd"); cur.Manifest().Version != "1.1.0" {
		t.Errorf("a refused update replaced the extension with %s", cur.Manifest().Version)
	}
	text := strings.Join(shown.Lines, "\n")
	for _, want := range []string{"may now connect to api.example.com", "new tool fetch()", "new MCP server m (local: node)"} {
		if !strings.Contains(text, want) {
			t.Errorf("update consent lacks %q:\n%s", want, text)
		}
	}
	res, err := s.Update(context.Background(), "upd", UpdateRequest{Consent: yes})
	must(t, err)
	if res.NewVersion != "2.0.0" || len(res.Changes) != 4 {
		t.Errorf("accepted update: %+v", res)
	}
	cur, _ := s.Get("upd")
	if !s.ConsentGranted("upd", PermissionsHash(cur.Manifest())) {
		t.Errorf("the new permissions' consent was not recorded")
	}
	if got := entries(t, s); !reflect.DeepEqual(got, []string{"upd"}) {
		t.Errorf("update left %v", got)
	}
}

func TestUninstallForgetsRecords(t *testing.T) {
	s := newStore(t)
	installLocal(t, s, "gone")
	installLocal(t, s, "kept")
	must(t, s.Disable("gone", ScopeUser))
	must(t, s.Disable("kept", ScopeUser))
	must(t, s.Uninstall("gone"))
	if _, err := s.Get("gone"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Get after uninstall: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(s.Dir(), EnablementFile))
	if strings.Contains(string(data), "gone") || !strings.Contains(string(data), "kept") {
		t.Errorf("enablement file after uninstall: %s", data)
	}
	if s.ConsentGranted("gone", PermissionsHash(&Manifest{})) {
		t.Errorf("consent survived uninstall")
	}
	if err := s.Uninstall("gone"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("second uninstall: %v", err)
	}
}

func TestConsentRecords(t *testing.T) {
	s := newStore(t)
	m := &Manifest{Permissions: &Permissions{Filesystem: &FilesystemPermissions{Read: AccessHome}}}
	h := PermissionsHash(m)
	if s.ConsentGranted("x", h) {
		t.Fatal("granted before recording")
	}
	must(t, s.RecordConsent("x", h))
	must(t, s.RecordConsent("y", h))
	if !s.ConsentGranted("x", h) || s.ConsentGranted("x", PermissionsHash(&Manifest{})) {
		t.Errorf("ConsentGranted does not follow the hash")
	}
	fi, err := os.Stat(s.consentPath())
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("consent file mode %o, want 0600", fi.Mode().Perm())
	}
	must(t, s.ForgetConsent("x"))
	if s.ConsentGranted("x", h) || !s.ConsentGranted("y", h) {
		t.Errorf("ForgetConsent removed the wrong record")
	}
	must(t, os.WriteFile(s.consentPath(), []byte("garbage"), 0o600))
	if s.ConsentGranted("y", h) {
		t.Errorf("a damaged file must count as no consent")
	}
	if err := s.RecordConsent("y", h); err == nil {
		t.Errorf("recording over a damaged file must fail rather than drop records")
	}
}

func TestListShowsBrokenEntries(t *testing.T) {
	s := newStore(t)
	installLocal(t, s, "good")
	writeTree(t, filepath.Join(s.Dir(), "bad"), map[string]string{ManifestFile: `{"name":"bad","version":"1","tools":[{"name":"x"}]}`})
	writeTree(t, filepath.Join(s.Dir(), "empty"), map[string]string{"README": "no manifest"})
	writeTree(t, filepath.Join(s.Dir(), ".gemkit-install-123"), map[string]string{"x": "staging"})
	list, err := s.List()
	must(t, err)
	var names []string
	for _, in := range list {
		names = append(names, in.Name)
	}
	if !reflect.DeepEqual(names, []string{"bad", "empty", "good"}) {
		t.Fatalf("List = %v", names)
	}
	var ve *ValidationError
	if !errors.As(list[0].Err, &ve) || list[0].Manifest() == nil {
		t.Errorf("bad: %v", list[0].Err)
	}
	if list[1].Err == nil || list[1].Extension != nil {
		t.Errorf("empty: %v", list[1].Err)
	}
	if list[2].Err != nil {
		t.Errorf("good: %v", list[2].Err)
	}
}

func TestGetMatchesCaseInsensitively(t *testing.T) {
	s := newStore(t)
	installLocal(t, s, "MixedCase")
	in, err := s.Get("mixedcase")
	if err != nil || in.Name != "MixedCase" {
		t.Errorf("Get = %v, %v", in, err)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := s.Get(bad); err == nil {
			t.Errorf("Get(%q) succeeded", bad)
		}
	}
}

func TestIsGitURL(t *testing.T) {
	for src, want := range map[string]bool{
		"https://github.com/a/b": true, "http://h/r.git": true, "ssh://git@h/r": true, "git@github.com:a/b.git": true,
		"file:///tmp/repo": true, "git://h/r": true, "./local": false, "/abs/path": false, "relative/dir": false,
		"C:/dir": false, "me@host:repo": true,
	} {
		if got := IsGitURL(src); got != want {
			t.Errorf("IsGitURL(%q) = %v, want %v", src, got, want)
		}
	}
}

// TestStoreReadsGeminiCLIEntries lays out entries the way Gemini CLI
// writes them (a GitHub release, a link, a local copy with extra metadata
// fields) and checks gemkit reads each as Gemini CLI does.
func TestStoreReadsGeminiCLIEntries(t *testing.T) {
	s := newStore(t)
	dev := t.TempDir()
	writeTree(t, dev, map[string]string{ManifestFile: manifestJSON("dev-ext", "0.0.1", `"contextFileName":"CTX.md"`), "CTX.md": "ctx"})
	writeTree(t, s.Dir(), map[string]string{
		"released/" + ManifestFile:        manifestJSON("released", "1.4.0", ""),
		"released/" + InstallMetadataFile: `{"source":"https://github.com/example/released","type":"github-release","releaseTag":"v1.4.0","autoUpdate":true,"allowPreRelease":false}`,
		"dev-ext/" + InstallMetadataFile:  `{"source":"` + dev + `","type":"link"}`,
		"copied/" + ManifestFile:          manifestJSON("copied", "2.0.0", ""),
		"copied/" + InstallMetadataFile:   `{"source":"/somewhere/copied","type":"local","futureField":{"x":1}}`,
		EnablementFile:                    `{"copied":{"overrides":["!` + s.Home() + `/*"]}}`,
	})
	list, err := s.List()
	must(t, err)
	if len(list) != 3 {
		t.Fatalf("List found %d entries", len(list))
	}
	byName := map[string]*Installed{}
	for _, in := range list {
		if in.Err != nil {
			t.Errorf("%s: %v", in.Name, in.Err)
		}
		byName[in.Name] = in
	}
	if md := byName["released"].Metadata; md.Type != SourceGitHubRelease || md.ReleaseTag != "v1.4.0" || !md.AutoUpdate {
		t.Errorf("github-release metadata: %+v", md)
	}
	if _, err := s.Update(context.Background(), "released", UpdateRequest{Consent: yes}); err == nil || !strings.Contains(err.Error(), "gemini extensions update released") {
		t.Errorf("update of a GitHub release: %v", err)
	}
	realDev, _ := filepath.EvalSymlinks(dev)
	if in := byName["dev-ext"]; in.Extension.Dir != realDev || len(in.Extension.ContextFiles) != 1 {
		t.Errorf("link entry: %+v", in.Extension)
	}
	if md := byName["copied"].Metadata; string(md.Extra["futureField"]) != `{"x":1}` {
		t.Errorf("unknown metadata fields lost: %+v", md)
	} else if out, _ := json.Marshal(md); !strings.Contains(string(out), `"futureField":{"x":1}`) {
		t.Errorf("unknown metadata fields not written back: %s", out)
	}
	if e, _ := s.Enablement("copied"); e.User || e.Workspace {
		t.Errorf("Gemini CLI's disable rule not followed: %+v", e)
	}
}

// TestStagingIsSwept checks which leftover staging folders the next
// command deletes: those of a process that is gone (a killed install) and
// old untagged ones in the extensions folder from earlier gemkit
// versions, but not those of a running process or young untagged ones.
func TestStagingIsSwept(t *testing.T) {
	s := newStore(t)
	dead := exec.Command("true")
	must(t, dead.Run())
	deadPID := dead.Process.Pid
	long := time.Now().Add(-2 * staleUntagged)
	cases := []struct {
		path string
		old  bool
		kept bool
	}{
		{filepath.Join(s.stagingDir(), fmt.Sprintf("install-%d-123", deadPID)), false, false},
		{filepath.Join(s.stagingDir(), fmt.Sprintf("install-%d-456", os.Getppid())), true, true},
		{filepath.Join(s.Dir(), ".gemkit-install-killed"), true, false},
		{filepath.Join(s.Dir(), ".gemkit-install-running"), false, true},
		{filepath.Join(s.Dir(), fmt.Sprintf(".gemkit-update-%d-789", deadPID)), false, false},
	}
	for _, c := range cases {
		writeTree(t, c.path, map[string]string{"clone/x": "half a clone"})
		if c.old {
			must(t, os.Chtimes(c.path, long, long))
		}
	}
	s.SweepStaging()
	for _, c := range cases {
		_, err := os.Stat(c.path)
		if c.kept && err != nil {
			t.Errorf("%s (maybe in use) was removed: %v", c.path, err)
		}
		if !c.kept && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed: %v", c.path, err)
		}
	}
}

// TestStagingOutsideExtensionsFolder checks that an install in progress
// leaves nothing in the extensions folder (Gemini CLI loads every folder
// there) and that the consent text shows ${extensionPath} as the folder
// the extension will be in, not the staging copy.
func TestStagingOutsideExtensionsFolder(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: `{"name": "staged", "version": "1.0.0",
		"mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}${/}server.js"]}}}`})
	s := newStore(t)
	var lines []string
	_, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: func(_ context.Context, p ConsentPrompt) (bool, error) {
		lines = p.Lines
		ents, _ := os.ReadDir(s.Dir())
		for _, e := range ents {
			if e.IsDir() {
				t.Errorf("during an install the extensions folder holds %s", e.Name())
			}
		}
		if st, _ := os.ReadDir(s.stagingDir()); len(st) != 1 {
			t.Errorf("staging folder holds %d entries, want 1", len(st))
		}
		return true, nil
	}})
	must(t, err)
	realDir, err := filepath.EvalSymlinks(s.Dir())
	must(t, err)
	want := filepath.Join(realDir, "staged", "server.js")
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, want) || strings.Contains(text, s.stagingDir()) {
		t.Errorf("consent text should name %s:\n%s", want, text)
	}
	if st, _ := os.ReadDir(s.stagingDir()); len(st) != 0 {
		t.Errorf("staging folder left: %v", st)
	}
}

func TestUninstallBySource(t *testing.T) {
	_, url := gitRepo(t, map[string]string{ManifestFile: manifestJSON("by-source", "1.0.0", "")})
	s := newStore(t)
	if _, err := s.Install(context.Background(), InstallRequest{Source: url, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	must(t, s.Uninstall(url))
	if _, err := s.Get("by-source"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("still installed: %v", err)
	}
}

// TestMissingFoldersAreNamed checks the messages for folders that are not
// there: an install source, a folder to link, and the source of a local
// install that has since moved.
func TestMissingFoldersAreNamed(t *testing.T) {
	s := newStore(t)
	gone := filepath.Join(t.TempDir(), "gone")
	if _, err := s.Install(context.Background(), InstallRequest{Source: gone, Consent: yes}); err == nil || err.Error() != gone+" does not exist; give a git URL or a local folder" {
		t.Errorf("install from a missing folder: %v", err)
	}
	if _, err := s.Link(context.Background(), gone, yes); err == nil || err.Error() != gone+" does not exist; give the folder of the extension you are working on" {
		t.Errorf("link of a missing folder: %v", err)
	}
	src := filepath.Join(t.TempDir(), "src")
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("moved", "1.0.0", "")})
	if _, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	must(t, os.Rename(src, src+"-elsewhere"))
	if _, err := s.Update(context.Background(), "moved", UpdateRequest{Consent: yes}); err == nil || !strings.Contains(err.Error(), "source folder "+src+" no longer exists") {
		t.Errorf("update from a moved folder: %v", err)
	}
	if list, _ := s.List(); len(list) != 1 || list[0].Err != nil {
		t.Errorf("a failed update changed the installed extension: %+v", list)
	}
}

// TestSwapExchangesInOneStep checks that an update puts the new version in
// place by exchanging the two folders, so that there is no moment without
// the extension: afterwards the staged path holds the old version.
func TestSwapExchangesInOneStep(t *testing.T) {
	s := newStore(t)
	stage, err := s.newStaging("update")
	must(t, err)
	entry := filepath.Join(s.Dir(), "ext")
	staged := filepath.Join(stage, "new")
	writeTree(t, entry, map[string]string{"v": "old"})
	writeTree(t, staged, map[string]string{"v": "new"})
	must(t, s.swap(staged, entry, stage))
	if data, _ := os.ReadFile(filepath.Join(entry, "v")); string(data) != "new" {
		t.Errorf("entry holds %q after the swap", data)
	}
	data, err := os.ReadFile(filepath.Join(staged, "v"))
	if err != nil || string(data) != "old" {
		t.Errorf("the staged path should hold the old version after an exchange: %q, %v", data, err)
	}
}

// TestInterruptedInstallDoesNotComplete cancels the context while consent
// is being given (as Ctrl-C would) and checks that nothing is installed.
func TestInterruptedInstallDoesNotComplete(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("stopped", "1.0.0", "")})
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := s.Install(ctx, InstallRequest{Source: src, Consent: func(context.Context, ConsentPrompt) (bool, error) {
		cancel()
		return true, nil
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if got := entries(t, s); len(got) != 0 {
		t.Errorf("an interrupted install left %v", got)
	}
}

// TestInstallDropsStaleEnablementRules checks that rules left from an
// earlier extension of the same name (say, one deleted by hand) do not
// silently disable a new install.
func TestInstallDropsStaleEnablementRules(t *testing.T) {
	s := newStore(t)
	must(t, os.MkdirAll(s.Dir(), 0o755))
	stale := `{"fresh": {"overrides": ["!` + slashed(s.Home()) + `*"]}, "other": {"overrides": ["!/x/*"]}}`
	must(t, os.WriteFile(filepath.Join(s.Dir(), EnablementFile), []byte(stale), 0o644))
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("fresh", "1.0.0", "")})
	if _, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
		t.Fatal(err)
	}
	if e, err := s.Enablement("fresh"); err != nil || !e.User || !e.Workspace {
		t.Errorf("new install: %+v, %v; want enabled", e, err)
	}
	data, _ := os.ReadFile(filepath.Join(s.Dir(), EnablementFile))
	if !strings.Contains(string(data), `"!/x/*"`) {
		t.Errorf("another extension's rules were lost: %s", data)
	}
}

func TestRedactSource(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:s3cret@example.com/r.git": "https://user:***@example.com/r.git",
		"https://ghp_token@github.com/o/r":      "https://***@github.com/o/r",
		"https://github.com/o/r":                "https://github.com/o/r",
		"ssh://git@example.com/r.git":           "ssh://git@example.com/r.git",
		"git@github.com:o/r.git":                "git@github.com:o/r.git",
		"/home/me/ext":                          "/home/me/ext",
	} {
		if got := RedactSource(in); got != want {
			t.Errorf("RedactSource(%q) = %q, want %q", in, got, want)
		}
	}
	// A source with a token is stored readable by the user alone.
	dir := t.TempDir()
	must(t, writeMetadata(dir, &InstallMetadata{Source: "https://tok@example.com/r", Type: SourceGit}))
	if fi, err := os.Stat(filepath.Join(dir, InstallMetadataFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("metadata with a token: %v %v", fi.Mode(), err)
	}
	// A clone that fails does not print the token either.
	s := newStore(t)
	var progress strings.Builder
	_, err := s.Install(context.Background(), InstallRequest{Source: "file://user:s3cret@localhost/nonexistent", Consent: yes, Progress: &progress})
	if err == nil || strings.Contains(err.Error()+progress.String(), "s3cret") {
		t.Errorf("the token shows: %v\n%s", err, progress.String())
	}
}

// TestConcurrentInstallsOfOneExtension races installs of the same
// extension: exactly one wins, the others change nothing, and no staging
// folder is left.
func TestConcurrentInstallsOfOneExtension(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, map[string]string{ManifestFile: manifestJSON("racer", "1.0.0", "")})
	s := newStore(t)
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := s.Install(context.Background(), InstallRequest{Source: src, Consent: yes})
			errs <- err
		}()
	}
	won := 0
	for range n {
		err := <-errs
		switch {
		case err == nil:
			won++
		case !strings.Contains(err.Error(), "already installed") && !strings.Contains(err.Error(), "installed meanwhile"):
			t.Errorf("losing install: %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d installs succeeded, want 1", won)
	}
	if got := entries(t, s); !reflect.DeepEqual(got, []string{"racer"}) {
		t.Errorf("extensions folder holds %v", got)
	}
	if !s.ConsentGranted("racer", PermissionsHash(&Manifest{})) {
		t.Errorf("the winner's consent was not recorded")
	}
}
