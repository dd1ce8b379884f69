package extension

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// benchStore installs count extensions from the "tools" template.
func benchStore(b *testing.B, count int) *Store {
	b.Helper()
	tmp := b.TempDir()
	st := OpenStore(filepath.Join(tmp, "home")).WithWorkspace(tmp)
	for i := range count {
		src := filepath.Join(tmp, "src", fmt.Sprintf("bench-ext-%03d", i))
		if _, err := CreateFromTemplate(src, "tools"); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Install(context.Background(), InstallRequest{Source: src, Consent: yes}); err != nil {
			b.Fatal(err)
		}
		if i%3 == 0 {
			if err := st.Disable(fmt.Sprintf("bench-ext-%03d", i), ScopeUser); err != nil {
				b.Fatal(err)
			}
		}
	}
	return st
}

// BenchmarkList measures loading 200 installed extensions with their
// enablement, the work of `gemkit extensions list` inside the process.
func BenchmarkList(b *testing.B) {
	st := benchStore(b, 200)
	b.ResetTimer()
	for b.Loop() {
		list, err := st.List()
		if err != nil || len(list) != 200 {
			b.Fatal(len(list), err)
		}
		enabled, err := st.Enablements()
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range list {
			enabled(in.Name)
		}
	}
}

// BenchmarkGet measures finding and loading one of 200 extensions, the
// work of `gemkit extensions describe`.
func BenchmarkGet(b *testing.B) {
	st := benchStore(b, 200)
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Get("bench-ext-100"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseManifest measures reading the "tools" template's
// manifest, most of the CPU time `list` spends per extension.
func BenchmarkParseManifest(b *testing.B) {
	data, err := templateFS.ReadFile("templates/tools/gemini-extension.json")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := ParseManifest(data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchExtension writes an extension of 17 small files (the toolrun row
// of bench/sandbox has the same shape) and returns its folder.
func benchExtension(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "ext")
	files := map[string]string{
		ManifestFile:     manifestJSON("bench", "1.0.0", toolJSON),
		"tools/hello.sh": "echo hello\n",
		"docs/usage.md":  "# Usage\n",
		"GEMINI.md":      "Context.\n",
		"README.md":      "Says hello.\n",
	}
	for i := range 12 {
		files[fmt.Sprintf("tools/lib/mod%02d.sh", i)] = strings.Repeat("# a library line of a tool\n", 40)
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkReadContent measures the consent digest a tool run takes of
// its extension's files: through a Root, each folder held open and each
// file opened beneath it and checked for other names (confined), against
// the plain walk it replaced, by path with the person's rights (plain,
// the reference: the digest of before, without the checks).
func BenchmarkReadContent(b *testing.B) {
	dir := benchExtension(b)
	b.Run("confined", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadContent(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := plainDigest(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	// An extension that ships its server with node_modules (the shape
	// of server-everything's: ~4,300 files, ~40 MB), read as a consent
	// check at a server start reads it: with no digest cache (cold),
	// every file hashed, and through a settled one (warm), every file
	// stat'd as its folder is listed but none opened.
	big := benchNodeModules(b, 4000, 10<<10)
	b.Run("node_modules/cold", func(b *testing.B) {
		for b.Loop() {
			if _, err := ReadContent(big); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("node_modules/warm", func(b *testing.B) {
		cache := filepath.Join(b.TempDir(), "digests", "c")
		// The cache written as a walk would well after the folder was
		// made, when its entries are no longer racy.
		if _, err := readContentCached(big, openDigestCache(cache, time.Now().Add(3*RacyWindow))); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			dc := openDigestCache(cache, time.Now())
			if _, err := readContentCached(big, dc); err != nil {
				b.Fatal(err)
			}
			if runtime.GOOS == "linux" && dc.hits.Load() != 4000 {
				b.Fatalf("%d files from the cache, want 4000", dc.hits.Load())
			}
		}
	})
}

// benchNodeModules writes files files of size bytes each, spread over
// packages of 20 files as npm lays them out, and returns the folder.
func benchNodeModules(b *testing.B, files, size int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "ext")
	data := make([]byte, size)
	for i := range files {
		p := filepath.Join(dir, "node_modules", fmt.Sprintf("pkg%03d", i/20), "lib", fmt.Sprintf("f%02d.js", i%20))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		data[0] = byte(i)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// plainDigest is the digest as gemkit took it before Root: a path walk,
// each file opened by its whole path. It is the benchmark's reference
// only.
func plainDigest(dir string) (string, error) {
	type file struct {
		rel  string
		mode fs.FileMode
		path string
	}
	var files []file
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, file{filepath.ToSlash(rel), info.Mode(), p})
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%q %o\n", f.rel, f.mode)
		if f.mode.IsRegular() {
			r, err := os.Open(f.path)
			if err != nil {
				return "", err
			}
			fh := sha256.New()
			_, err = io.Copy(fh, r)
			r.Close()
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%x\n", fh.Sum(nil))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// BenchmarkConsentCheck25k measures the consent check of an extension as
// large as the published packages gemkit must take (mongodb's holds
// 22,681 files): 25,000 files laid out as npm lays out a node_modules,
// its digest cache settled, as at every warm start of its server (warm),
// beside a plain stat walk of the same tree (stat-walk: filepath.WalkDir
// and an lstat of every entry, nothing opened or hashed, the least any
// check of the files' state could do), in the same run, and what a
// warm start of its server checks now that it runs from gemkit's copy
// of the extension as agreed to (start: Store.AgreedCopy, which reads
// gemkit's records and the copy's manifest, nothing of the folder).
// The target is a warm check under 50 ms.
func BenchmarkConsentCheck25k(b *testing.B) {
	const files = 25000
	big := benchNodeModules(b, files, 1<<10)
	b.Run("start", func(b *testing.B) {
		// The same tree with a server in its manifest, agreed to and
		// copied as a switch does, in a folder of its own: the other
		// sides' tree stays one of exactly 25,000 files.
		dir := filepath.Join(b.TempDir(), "big-ext")
		if out, err := exec.Command("cp", "-a", big, dir).CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		manifest := `{"name": "big-ext", "version": "1.0.0", "mcpServers": {"srv": {"command": "node", "args": ["${extensionPath}/node_modules/pkg000/lib/f00.js"]}}}`
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644); err != nil {
			b.Fatal(err)
		}
		ext, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		c, err := ReadContent(dir)
		if err != nil {
			b.Fatal(err)
		}
		st := OpenStore(b.TempDir())
		if err := st.RecordConsentContent(ext.Manifest.Name, PermissionsHash(ext.Manifest), c); err != nil {
			b.Fatal(err)
		}
		if _, err := st.KeepAgreedCopy(context.Background(), ext); err != nil {
			b.Fatal(err)
		}
		defer cpuMetric(b)()
		for b.Loop() {
			if st.AgreedCopy(ext) == "" {
				b.Fatal("no agreed copy")
			}
		}
	})
	cache := filepath.Join(b.TempDir(), "digests", "c")
	if _, err := readContentCached(big, openDigestCache(cache, time.Now().Add(3*RacyWindow))); err != nil {
		b.Fatal(err)
	}
	b.Run("warm", func(b *testing.B) {
		defer cpuMetric(b)()
		for b.Loop() {
			dc := openDigestCache(cache, time.Now())
			if _, err := readContentCached(big, dc); err != nil {
				b.Fatal(err)
			}
			if runtime.GOOS == "linux" && dc.hits.Load() != files {
				b.Fatalf("%d files from the cache, want %d", dc.hits.Load(), files)
			}
		}
	})
	b.Run("stat-walk", func(b *testing.B) {
		defer cpuMetric(b)()
		for b.Loop() {
			n := 0
			err := filepath.WalkDir(big, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				if _, err := os.Lstat(p); err != nil {
					return err
				}
				n++
				return nil
			})
			if err != nil || n != files {
				b.Fatal(n, err)
			}
		}
	})
}

// cpuMetric reports, when the returned func is called at the end of the
// benchmark, the CPU time (user and system, all threads) of one op: what
// the machine's load does not inflate, unlike the time per op, on a
// machine whose other work takes the cores.
func cpuMetric(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
		}
	}
}
