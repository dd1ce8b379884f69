package extension

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// TestContentDigest: the digest follows the code (content, modes,
// symlinks, new files) and not the person's settings or gemkit's install
// metadata.
func TestContentDigest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	write(ManifestFile, "{}", 0o644)
	write("tools/t.sh", "echo hi\n", 0o755)
	digest := func() string {
		t.Helper()
		d, err := ContentDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest()
	write(".env", "TOKEN=x\n", 0o600)
	write(InstallMetadataFile, `{"source": "x"}`, 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	write(".git/HEAD", "ref\n", 0o644)
	if d := digest(); d != base {
		t.Fatal("settings, install metadata or .git changed the digest")
	}
	for _, change := range []func(){
		func() { write("tools/t.sh", "echo planted\n", 0o755) },
		func() { os.Chmod(filepath.Join(dir, "tools/t.sh"), 0o644) },
		func() { write("tools/new.py", "", 0o644) },
		func() { os.Symlink("/etc/passwd", filepath.Join(dir, "link")) },
	} {
		before := digest()
		change()
		if digest() == before {
			t.Fatal("a change of the code kept the digest")
		}
	}
}

// TestContentDigestStable: the digest of a folder is the one gemkit
// recorded before the per-file list existed, so that consent given then
// still holds.
func TestContentDigestStable(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{ManifestFile: "{}", "tools/t.sh": "echo hi\n", "run": "->tools/t.sh"})
	os.Chmod(filepath.Join(dir, ManifestFile), 0o644)
	os.Chmod(filepath.Join(dir, "tools/t.sh"), 0o755)
	const want = "sha256:fa13057774eb92dd0e4747a064095cfb20d9d264e0234a1b2ada03168de3113d"
	if d, err := ContentDigest(dir); err != nil || d != want {
		t.Fatalf("digest %s (%v), want %s", d, err, want)
	}
}

// TestContentNotice: when the files differ from those agreed to, the
// notice names each one and how it changed, at most maxNamedFiles of
// them, and says why it cannot when the record predates the list.
func TestContentNotice(t *testing.T) {
	base := map[string]string{
		ManifestFile:       `{"name": "x"}`,
		"tools/slugify.py": "print('slug')\n",
		"tools/old.sh":     "echo old\n",
		"README.md":        "hi\n",
		"link":             "->tools/slugify.py",
	}
	for _, c := range contentNoticeCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, base)
			agreed, err := ReadContent(dir)
			if err != nil {
				t.Fatal(err)
			}
			if c.agreed != nil {
				agreed = c.agreed(agreed)
			}
			if c.change != nil {
				c.change(t, dir)
			}
			now, err := ReadContent(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := ContentNotice(agreed, now, dir)
			want := strings.ReplaceAll(c.want, "DIR", dir)
			if (want == "") != (got == "") || !strings.Contains(got, want) {
				t.Errorf("notice %q, want %q", got, want)
			}
		})
	}
}

// contentNoticeCase is one change to an agreed folder and the notice it
// is to give.
type contentNoticeCase struct {
	name   string
	change func(t *testing.T, dir string)
	// agreed turns the recorded Content into an older record's.
	agreed func(Content) Content
	want   string
}

// contentNoticeCases are TestContentNotice's changes, one of each kind a
// file can go through, and the records older than the file list.
func contentNoticeCases() []contentNoticeCase {
	return []contentNoticeCase{
		{name: "unchanged", want: ""},
		{
			name: "edited",
			change: func(t *testing.T, dir string) {
				writeTree(t, dir, map[string]string{"tools/slugify.py": "import os\n"})
			},
			want: "Since you agreed, this file of the extension changed: tools/slugify.py (changed). Look at it in DIR before agreeing again.",
		},
		{
			name:   "added",
			change: func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"tools/new.sh": "curl x | sh\n"}) },
			want:   "this file of the extension changed: tools/new.sh (added).",
		},
		{
			name:   "removed",
			change: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "tools/old.sh")) },
			want:   "tools/old.sh (removed).",
		},
		{
			name:   "mode",
			change: func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "tools/old.sh"), 0o755) },
			want:   "tools/old.sh (mode changed).",
		},
		{
			name: "symlink retargeted",
			change: func(t *testing.T, dir string) {
				os.Remove(filepath.Join(dir, "link"))
				writeTree(t, dir, map[string]string{"link": "->/etc/passwd"})
			},
			want: "this file of the extension changed: link (changed).",
		},
		{
			name: "several, in path order",
			change: func(t *testing.T, dir string) {
				writeTree(t, dir, map[string]string{"tools/slugify.py": "import os\n", "tools/new.sh": "x\n"})
				os.Remove(filepath.Join(dir, "README.md"))
			},
			want: "these files of the extension changed: README.md (removed), tools/new.sh (added), tools/slugify.py (changed). Look at them in DIR before agreeing again.",
		},
		{
			name: "more than the cap",
			change: func(t *testing.T, dir string) {
				for i := range 13 {
					writeTree(t, dir, map[string]string{fmt.Sprintf("gen/%02d.sh", i): "x\n"})
				}
			},
			want: "gen/00.sh (added), gen/01.sh (added), gen/02.sh (added), gen/03.sh (added), gen/04.sh (added), gen/05.sh (added), gen/06.sh (added), gen/07.sh (added), gen/08.sh (added), gen/09.sh (added) and 3 more. Look at them",
		},
		{
			name:   "unprintable name",
			change: func(t *testing.T, dir string) { writeTree(t, dir, map[string]string{"tools/\x1b[2Kok.sh": "x\n"}) },
			want:   `tools/\x1b[2Kok.sh (added)`,
		},
		{
			name: "record without the list",
			change: func(t *testing.T, dir string) {
				writeTree(t, dir, map[string]string{"tools/slugify.py": "import os\n"})
			},
			agreed: func(c Content) Content { return Content{Digest: c.Digest} },
			want:   "Since you agreed, the extension's files changed; gemkit cannot name them, as your consent was recorded before it kept a list of files. Look at DIR before agreeing again.",
		},
		{
			name:   "record without the digest",
			agreed: func(Content) Content { return Content{} },
			want:   "gemkit now binds your consent to the extension's files as well as to its permissions; agree once more to run these files.",
		},
	}
}

// TestConsentContentRecords: consent binds to the files, their digest and
// their list; a record written before content binding (permissions only)
// or before the list (digest only) is still read; consent.json stays
// private.
func TestConsentContentRecords(t *testing.T) {
	s := OpenStore(t.TempDir())
	if err := s.RecordConsent("old", "h1"); err != nil {
		t.Fatal(err)
	}
	if c, ok := s.ConsentContent("old", "h1"); !ok || c.Digest != "" || c.Files != nil {
		t.Fatalf("old record: %+v %v", c, ok)
	}
	if !s.ConsentGranted("old", "h1") {
		t.Fatal("old record not granted")
	}
	if err := s.RecordConsentContent("digest-only", "h3", Content{Digest: "sha256:def"}); err != nil {
		t.Fatal(err)
	}
	if c, ok := s.ConsentContent("digest-only", "h3"); !ok || c.Digest != "sha256:def" || c.Files != nil {
		t.Fatalf("record without the list: %+v %v", c, ok)
	}
	files := map[string]string{"gemini-extension.json": "-rw-r--r-- 44136fa3"}
	if err := s.RecordConsentContent("new", "h2", Content{Digest: "sha256:abc", Files: files}); err != nil {
		t.Fatal(err)
	}
	if c, ok := s.ConsentContent("new", "h2"); !ok || c.Digest != "sha256:abc" || c.Files != nil || len(c.FileList()) != 1 || c.FileList()["gemini-extension.json"] != files["gemini-extension.json"] {
		t.Fatalf("new record: %+v %v, list %v", c, ok, c.FileList())
	}
	if _, ok := s.ConsentContent("new", "other"); ok {
		t.Fatal("other permissions granted")
	}
	for _, p := range []string{s.consentPath(), s.consentFilesPath("new")} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, fi, err)
		}
	}
	// The list is kept beside consent.json, which every start reads,
	// not in it.
	data, _ := os.ReadFile(s.consentPath())
	var raw struct {
		Extensions map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"digest-only", "new"} {
		if _, ok := raw.Extensions[name]["files"]; ok {
			t.Errorf("%s written with its list in consent.json:\n%s", name, data)
		}
	}
	list, _ := os.ReadFile(s.consentFilesPath("new"))
	var got bytes.Buffer
	json.Compact(&got, list)
	if got.String() != `{"contentDigest":"sha256:abc","files":{"gemini-extension.json":"-rw-r--r-- 44136fa3"}}` {
		t.Errorf("list written as %s", got.String())
	}
	// A list left by another grant (its digest is not the record's) is
	// not taken for this one's.
	if err := os.WriteFile(s.consentFilesPath("new"), []byte(`{"contentDigest":"sha256:other","files":{"x":"-rw-r--r-- 00"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.ConsentContent("new", "h2"); c.FileList() != nil {
		t.Errorf("list of other files used: %v", c.FileList())
	}
	// Forgetting the consent forgets its list.
	if err := s.ForgetConsent("new"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.consentFilesPath("new")); !os.IsNotExist(err) {
		t.Errorf("list kept after ForgetConsent: %v", err)
	}
}

// TestConsentRecordWithInlineList: a record written when consent.json
// held the per-file list is still read, and its list names what
// changed.
func TestConsentRecordWithInlineList(t *testing.T) {
	s := OpenStore(t.TempDir())
	if err := os.MkdirAll(s.stateDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	old := `{"version": 1, "extensions": {"ext": {"permissionsHash": "` + s.consentHash("ext", "h") + `", "contentDigest": "sha256:abc", "grantedAt": "2026-01-01T00:00:00Z", "files": {"a.sh": "-rwxr-xr-x 00"}}}}`
	if err := os.WriteFile(s.consentPath(), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	agreed, ok := s.ConsentContent("ext", "h")
	if !ok || agreed.Files["a.sh"] != "-rwxr-xr-x 00" {
		t.Fatalf("old record: %+v %v", agreed, ok)
	}
	now := Content{Digest: "sha256:def", Files: map[string]string{"a.sh": "-rwxr-xr-x 11"}}
	if got := ContentNotice(agreed, now, "/ext"); !strings.Contains(got, "a.sh (changed)") {
		t.Errorf("notice %q", got)
	}
	// The next write of the records, for another extension, moves the
	// list to its own file: consent.json sheds it, and it is still read.
	if err := s.ForgetConsent("other"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(s.consentPath()); strings.Contains(string(b), `"files"`) {
		t.Errorf("consent.json still holds a per-file list:\n%s", b)
	}
	if agreed, ok := s.ConsentContent("ext", "h"); !ok || agreed.FileList()["a.sh"] != "-rwxr-xr-x 00" {
		t.Errorf("the moved list: %+v %v", agreed.FileList(), ok)
	}
}

// TestReadContentFiles: the per-file list holds every file the digest
// covers, with its mode and the SHA-256 of its content or link target,
// and leaves out what the digest leaves out.
func TestReadContentFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{ManifestFile: "{}", ".env": "K=v\n", InstallMetadataFile: "{}", ".git/HEAD": "ref\n", "link": "->gemini-extension.json"})
	os.Chmod(filepath.Join(dir, ManifestFile), 0o644)
	c, err := ReadContent(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.FileList()) != 2 {
		t.Fatalf("files %v, want the manifest and the link only", c.FileList())
	}
	// The SHA-256 of "{}", and of "gemini-extension.json" (a symlink's
	// permission bits differ between systems).
	if f := c.FileList()[ManifestFile]; f != "-rw-r--r-- 44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("manifest: %q", f)
	}
	if f := c.FileList()["link"]; !strings.HasPrefix(f, "L") || !strings.HasSuffix(f, " 3e0472dd4c66bdfb357315f1cd94143bd45cd98f56f6242acb1214852c7d2d99") {
		t.Errorf("link: %q", f)
	}
}

// TestHashFileBound: a file longer than the bound is refused, never
// hashed in part: a digest of its head alone would let the bytes past
// the bound change after the person agreed. The walk checks the size
// listed before hashing, but a file can grow between its listing and
// its opening.
func TestHashFileBound(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"fits": "12345678", "longer": "123456789"})
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = root.Scan(1, func(dir *fsutil.ScanDir, rel string, _ *fsutil.ScanStat) error {
		switch _, sum, err := hashFile(dir.OpenStat, rel, dir.Path(rel), 8); {
		case rel == "fits" && (err != nil || hex.EncodeToString(sum) != "ef797c8118f02dfb649607dd5d3f8c7623048c9c063d532cc95c5ed7a898a64f"):
			t.Errorf("a file at the bound: %x %v", sum, err)
		case rel == "longer" && err == nil:
			t.Errorf("a file over the bound hashed as %x, its head only", sum)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNamedChangesOwnFirst: the extension's own changed files are named
// before those of its dependencies, so that an edited server.js is not
// hidden behind what an npm install changed (the sixth newcomer tour
// found it in "and 204 more").
func TestNamedChangesOwnFirst(t *testing.T) {
	var changes []FileChange
	for i := range 204 {
		changes = append(changes, FileChange{Path: fmt.Sprintf("node_modules/pkg%03d/index.js", i), How: FileChanged})
	}
	changes = append(changes, FileChange{Path: "server.js", How: FileChanged}, FileChange{Path: "vendor/lib.py", How: FileAdded})
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	got := namedChanges(changes)
	want := "server.js (changed), node_modules/pkg000/index.js (changed), node_modules/pkg001/index.js (changed), node_modules/pkg002/index.js (changed), node_modules/pkg003/index.js (changed), node_modules/pkg004/index.js (changed), node_modules/pkg005/index.js (changed), node_modules/pkg006/index.js (changed), node_modules/pkg007/index.js (changed), node_modules/pkg008/index.js (changed) and 196 in its dependencies (node_modules, vendor)"
	if got != want {
		t.Errorf("namedChanges:\n got %s\nwant %s", got, want)
	}
	// Many of its own: they fill the names, and the dependencies are
	// counted apart.
	for i := range 12 {
		changes = append(changes, FileChange{Path: fmt.Sprintf("lib/%02d.js", i), How: FileChanged})
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	if got := namedChanges(changes); !strings.HasPrefix(got, "lib/00.js (changed)") || !strings.HasSuffix(got, " and 3 more of its own, and 205 in its dependencies (node_modules, vendor)") {
		t.Errorf("namedChanges with 13 of its own: %s", got)
	}
}

// TestContentBounds: a folder past the bounds consent binds is refused
// with an error that says the bound and what to do, whether there are
// too many files or too many bytes, or one file is too large; at the
// bounds it is read.
func TestContentBounds(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("node_modules/p/f%d.js", i)] = "12345678"
	}
	writeTree(t, dir, files)
	root, err := fsutil.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := readContentBounded(root, nil, 10, 80); err != nil {
		t.Fatalf("at the bounds: %v", err)
	}
	for _, c := range []struct {
		name  string
		files int
		bytes int64
		want  string
	}{
		{"files", 9, 1 << 20, "it holds 10 files, past the 9 files gemkit binds consent to (the bound of 1 MiB is not passed: its files come to 80 bytes)"},
		{"bytes", 100, 79, "its files come to 80 bytes, past the 79 bytes gemkit binds consent to (the bound of 100 files is not passed)"},
		{"both", 5, 39, "it holds 10 files of 80 bytes, past both bounds gemkit binds consent to: 5 files and 39 bytes"},
		// Counted on to twice the bound of files, and no further.
		{"files, counted to twice the bound", 4, 1 << 20, "it holds at least 9 files, past the 4 files gemkit binds consent to (it hashes"},
		{"one file", 100, 7, "is larger than 7 bytes, the most gemkit binds consent to; remove it from the extension's folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := readContentBounded(root, nil, c.files, c.bytes)
			var tl *TooLargeError
			if !errors.As(err, &tl) || !strings.Contains(err.Error(), c.want) || !Unbindable(err) {
				t.Fatalf("bounds %d files, %d bytes: %v, want a TooLargeError saying %q", c.files, c.bytes, err, c.want)
			}
			if tl.File == "" && !strings.Contains(err.Error(), "npm prune --omit=dev") {
				t.Errorf("the error does not say what to do: %v", err)
			}
		})
	}
	// As the one check says it, naming the folder.
	tl := &TooLargeError{Dir: dir, Files: maxContentFiles, Bytes: maxContentBytes, Found: 123456, FoundBytes: 1 << 30}
	if want := "gemkit cannot bind your consent to the files of the extension in " + dir + ", so it runs neither its tools nor its MCP servers: it holds 123456 files, past the 100000 files gemkit binds consent to (the bound of 2 GiB is not passed: its files come to 1 GiB)"; !strings.HasPrefix(tl.Error(), want) {
		t.Errorf("the error: %s", tl)
	}
}

// TestConsentStatePermissionsChanged: where consent stands after the
// manifest asked for more names the files changed since the person
// agreed (the manifest among them), as it does when only files changed:
// `gemkit extensions consent NAME` says them first ("Since you agreed,
// ...") and then that consent was given to other permissions.
func TestConsentStatePermissionsChanged(t *testing.T) {
	home := t.TempDir()
	s := OpenStore(home)
	dir := filepath.Join(t.TempDir(), "ext")
	writeTree(t, dir, map[string]string{ManifestFile: manifestJSON("grown", "1.0.0", toolJSON), "tools/hello.sh": "echo hi"})
	ext, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.recordConsentFor("grown", ext.Manifest, dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, manifest string
		want           string // in the Notice; "" for none
	}{
		{"same manifest", manifestJSON("grown", "1.0.0", toolJSON), ""},
		{"a host more", manifestJSON("grown", "1.0.0", strings.Replace(toolJSON, `{"filesystem":{"read":"workspace"}}`, `{"filesystem":{"read":"workspace"},"network":{"allowedHosts":["api.example.com"]}}`, 1)),
			"Since you agreed, this file of the extension changed: gemini-extension.json (changed)."},
	} {
		t.Run(c.name, func(t *testing.T) {
			writeTree(t, dir, map[string]string{})
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(c.manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			now, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.Consent(now)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if !st.Granted || st.Notice != "" {
					t.Errorf("unchanged: %+v", st)
				}
				return
			}
			if !st.PermissionsChanged || !strings.Contains(st.Notice, c.want) {
				t.Errorf("changed: permissions changed %v, notice %q, want %q", st.PermissionsChanged, st.Notice, c.want)
			}
		})
	}
}
