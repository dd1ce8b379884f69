package publishedplugins

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// vendored is the folder of the plugins of anthropics/claude-plugins-official.
const vendored = "testdata/claude-plugins-official"

// gitBlob is the id git gives a file's bytes, as `git hash-object`
// prints it: the id the published repository's tree names.
func gitBlob(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// TestVendoredUnchanged checks every vendored file against its
// folder's blobs.txt, the blob ids of the published repository's commit:
// a file edited, added or lost here fails it, so what the tests run is
// what was published.
func TestVendoredUnchanged(t *testing.T) {
	lists, err := filepath.Glob("testdata/*/blobs.txt")
	if err != nil || len(lists) == 0 {
		t.Fatalf("no testdata/*/blobs.txt (%v)", err)
	}
	for _, list := range lists {
		t.Run(filepath.Base(filepath.Dir(list)), func(t *testing.T) { checkBlobs(t, filepath.Dir(list)) })
	}
}

// checkBlobs checks the files under dir's folders against dir/blobs.txt
// (the folder's own README.md and blobs.txt are not vendored).
func checkBlobs(t *testing.T, dir string) {
	list, err := os.ReadFile(filepath.Join(dir, "blobs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(list)))
	for sc.Scan() {
		id, name, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("blobs.txt: line %q is not an id and a path", sc.Text())
		}
		want[name] = id
	}
	var got []string
	err = fs.WalkDir(os.DirFS(dir), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(name, "/") {
			return err
		}
		got = append(got, name)
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		if id, ok := want[name]; !ok {
			t.Errorf("%s is not in blobs.txt: not a published file", name)
		} else if b := gitBlob(data); b != id {
			t.Errorf("%s: blob %s, published %s: edited since it was vendored", name, b, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("%s, in blobs.txt, is missing", name)
		}
	}
}
