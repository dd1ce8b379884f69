package npmregistrytest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type packument struct {
	Name     string            `json:"name"`
	DistTags map[string]string `json:"dist-tags"`
	Versions map[string]struct {
		Version          string `json:"version"`
		HasInstallScript bool   `json:"hasInstallScript"`
		Dist             struct {
			Tarball, Integrity, Shasum string
		} `json:"dist"`
	} `json:"versions"`
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestPackumentAndTarball: a package is served as npm reads it (a
// scoped name asked escaped), its tarball under the URL the packument
// gives, with the integrity the packument gives, holding its files
// under package/; a version published later becomes the latest.
func TestPackumentAndTarball(t *testing.T) {
	r := New(t, nil)
	r.Publish(map[string]string{"package.json": `{"name": "@s/p", "version": "1.0.0", "bin": "run.js", "scripts": {"postinstall": "x"}}`, "run.js": "#!/usr/bin/env node\n"})
	code, b := get(t, r.URL+"@s%2fp")
	var p packument
	if code != 200 || json.Unmarshal(b, &p) != nil {
		t.Fatalf("%d %s", code, b)
	}
	v := p.Versions["1.0.0"]
	if p.Name != "@s/p" || p.DistTags["latest"] != "1.0.0" || !v.HasInstallScript || v.Dist.Tarball != r.URL+"@s/p/-/p-1.0.0.tgz" {
		t.Fatalf("packument: %s", b)
	}
	code, tgz := get(t, v.Dist.Tarball)
	sum := sha512.Sum512(tgz)
	if code != 200 || "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) != v.Dist.Integrity {
		t.Fatalf("tarball: %d, integrity %s", code, v.Dist.Integrity)
	}
	gz, err := gzip.NewReader(strings.NewReader(string(tgz)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		if h.Name == "package/run.js" && h.Mode&0o111 == 0 {
			t.Error("a script is packed without its executable bit")
		}
	}
	if strings.Join(names, " ") != "package/package.json package/run.js" {
		t.Errorf("the tarball holds %q", names)
	}
	r.Publish(map[string]string{"package.json": `{"name": "@s/p", "version": "1.1.0"}`})
	_, b = get(t, r.URL+"@s%2fp")
	json.Unmarshal(b, &p)
	if p.DistTags["latest"] != "1.1.0" || len(p.Versions) != 2 {
		t.Errorf("after a publish: %s", b)
	}
	if got := r.Requests(); len(got) != 3 || got[0] != "/@s/p" {
		t.Errorf("Requests = %q", got)
	}
}

// TestAddInstalled: a tree npm installed is served package by package,
// each without its own node_modules, and nothing the tree lacks.
func TestAddInstalled(t *testing.T) {
	dir := t.TempDir()
	write := func(p, body string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644)
	}
	write("package-lock.json", `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/a": {"version": "1.0.0"},
 "node_modules/a/node_modules/b": {"version": "2.0.0"}, "node_modules/b": {"version": "1.0.0"}, "node_modules/missing-optional": {"version": "1.0.0", "optional": true}}}`)
	write("node_modules/a/package.json", `{"name": "a", "version": "1.0.0", "dependencies": {"b": "^2.0.0"}}`)
	write("node_modules/a/index.js", "")
	write("node_modules/a/node_modules/b/package.json", `{"name": "b", "version": "2.0.0"}`)
	write("node_modules/b/package.json", `{"name": "b", "version": "1.0.0"}`)
	r := New(t, nil)
	r.AddInstalled(dir)
	_, b := get(t, r.URL+"b")
	var p packument
	json.Unmarshal(b, &p)
	if len(p.Versions) != 2 || p.DistTags["latest"] != "2.0.0" {
		t.Errorf("b: %s", b)
	}
	if code, _ := get(t, r.URL+"missing-optional"); code != 404 {
		t.Errorf("a package the tree lacks: %d", code)
	}
	_, b = get(t, r.URL+"a")
	json.Unmarshal(b, &p)
	_, tgz := get(t, p.Versions["1.0.0"].Dist.Tarball)
	gz, _ := gzip.NewReader(strings.NewReader(string(tgz)))
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if strings.Contains(h.Name, "node_modules") {
			t.Errorf("a's tarball holds %s", h.Name)
		}
	}
}

// TestBreakages: each breakage answers as a misbehaving registry would.
func TestBreakages(t *testing.T) {
	r := New(t, nil)
	r.Publish(map[string]string{"package.json": `{"name": "p", "version": "1.0.0"}`})
	for how, want := range map[Breakage]int{NotFound: 404, NotJSON: 200, ServerError: 500} {
		r.Break("p", how)
		if code, _ := get(t, r.URL+"p"); code != want {
			t.Errorf("breakage %d: %d, want %d", how, code, want)
		}
	}
	r.Break("p", ElsewhereTarball)
	_, b := get(t, r.URL+"p")
	if !strings.Contains(string(b), "http://127.0.0.2:") {
		t.Errorf("ElsewhereTarball: %s", b)
	}
	r.Break("p", WrongBytes)
	_, b = get(t, r.URL+"p")
	var p packument
	json.Unmarshal(b, &p)
	_, tgz := get(t, p.Versions["1.0.0"].Dist.Tarball)
	sum := sha512.Sum512(tgz)
	if "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) == p.Versions["1.0.0"].Dist.Integrity {
		t.Error("WrongBytes served the right bytes")
	}
}

// TestHold: a held tarball is answered only once released.
func TestHold(t *testing.T) {
	r := New(t, nil)
	r.Publish(map[string]string{"package.json": `{"name": "p", "version": "1.0.0"}`})
	reached, release := r.Hold("p")
	done := make(chan int)
	go func() {
		code, _ := get(t, r.URL+"p/-/p-1.0.0.tgz")
		done <- code
	}()
	<-reached
	select {
	case <-done:
		t.Fatal("the held tarball was answered")
	default:
	}
	release()
	if code := <-done; code != 200 {
		t.Errorf("released: %d", code)
	}
}

// TestRevalidation: a packument carries an ETag; asked again with it
// (If-None-Match), as npm revalidates its cache, the registry answers
// 304 with no body; a publish changes it.
func TestRevalidation(t *testing.T) {
	r := New(t, nil)
	r.Publish(map[string]string{"package.json": `{"name": "p", "version": "1.0.0"}`})
	ask := func(etag string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, r.URL+"p", nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	first := ask("")
	etag := first.Header.Get("ETag")
	if first.StatusCode != 200 || etag == "" {
		t.Fatalf("first: %d, ETag %q", first.StatusCode, etag)
	}
	if again := ask(etag); again.StatusCode != http.StatusNotModified {
		t.Errorf("revalidated: %d, want 304", again.StatusCode)
	}
	r.Publish(map[string]string{"package.json": `{"name": "p", "version": "1.1.0"}`})
	if after := ask(etag); after.StatusCode != 200 || after.Header.Get("ETag") == etag {
		t.Errorf("after a publish: %d, ETag %q", after.StatusCode, after.Header.Get("ETag"))
	}
}

// TestWritesRefused: a publish is refused and recorded, with the
// credentials it carried.
func TestWritesRefused(t *testing.T) {
	r := New(t, nil)
	req, _ := http.NewRequest(http.MethodPut, r.URL+"stolen", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer t-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if w := r.Writes(); resp.StatusCode != http.StatusMethodNotAllowed || len(w) != 1 || w[0] != (Write{Method: "PUT", Path: "/stolen", Authorization: "Bearer t-1"}) {
		t.Errorf("%d, writes %+v", resp.StatusCode, w)
	}
}

// TestHoldAfter: a tarball held after its first bytes sends them, and
// the rest only once released; a gzipped one is smaller than its files.
func TestHoldAfter(t *testing.T) {
	r := New(t, nil)
	big := strings.Repeat("0", 1<<20)
	r.PublishGzipped(map[string]string{"package.json": `{"name": "p", "version": "1.0.0"}`, "zeros.txt": big})
	reached, release := r.HoldAfter("p", 100)
	resp, err := http.Get(r.URL + "p/-/p-1.0.0.tgz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(resp.Body, head); err != nil {
		t.Fatal(err)
	}
	<-reached
	release()
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tgz := append(head, rest...)
	if len(tgz) >= len(big) {
		t.Errorf("the gzipped tarball is %d bytes, for 1 MiB of zeros", len(tgz))
	}
	gz, err := gzip.NewReader(strings.NewReader(string(tgz)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	found := false
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		found = found || h.Name == "package/zeros.txt" && h.Size == int64(len(big))
	}
	if !found {
		t.Error("the tarball lacks package/zeros.txt")
	}
}
