package extension

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
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
