package npmregistrytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// A version's tarball, packed as npm pack packs one, and the reading of
// versions the registry's latest tag needs.

// build packs v's files, once.
func (r *Registry) build(v *version) *tarball {
	v.tgz.once.Do(func() {
		v.tgz.data, v.tgz.err = pack(v)
		if v.tgz.err == nil {
			s512 := sha512.Sum512(v.tgz.data)
			s1 := sha1.Sum(v.tgz.data)
			v.tgz.integrity = "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
			v.tgz.shasum = hex.EncodeToString(s1[:])
		}
	})
	return v.tgz
}

// packTime is the time of every entry of a tarball, as npm pack sets it.
var packTime = time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)

// pack writes v's files as a gzipped tarball under "package/": a
// folder's files but its node_modules (its own dependencies, which the
// registry serves apart), or the files a test gave.
func pack(v *version) ([]byte, error) {
	var buf bytes.Buffer
	// Stored, not compressed: the tarballs cross loopback, and packing
	// hundreds of MB for a test is what would cost.
	level := gzip.NoCompression
	if v.gzipped {
		level = gzip.DefaultCompression
	}
	gz, _ := gzip.NewWriterLevel(&buf, level)
	tw := tar.NewWriter(gz)
	write := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: mode, Size: int64(len(data)), ModTime: packTime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if v.files != nil {
		names := make([]string, 0, len(v.files))
		for n := range v.files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			mode := int64(0o644)
			if strings.HasPrefix(v.files[n], "#!") {
				mode = 0o755
			}
			if err := write(n, mode, []byte(v.files[n])); err != nil {
				return nil, err
			}
		}
	} else {
		err := filepath.WalkDir(v.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(v.dir, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() && rel == "node_modules" {
				return filepath.SkipDir
			}
			if !d.Type().IsRegular() {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return write(rel, int64(fi.Mode().Perm()), data)
		})
		if err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// hasInstallScript says whether npm would run install scripts of m.
func hasInstallScript(m map[string]any) bool {
	s, _ := m["scripts"].(map[string]any)
	for _, k := range []string{"preinstall", "install", "postinstall"} {
		if _, ok := s[k]; ok {
			return true
		}
	}
	return false
}

// newer reports whether the version a sorts after b (numbers compared
// as numbers, a pre-release before its release): enough for the
// versions tests publish.
func newer(a, b string) bool {
	pa, pb := strings.SplitN(a, "-", 2), strings.SplitN(b, "-", 2)
	na, nb := strings.Split(pa[0], "."), strings.Split(pb[0], ".")
	for i := 0; i < len(na) && i < len(nb); i++ {
		var x, y int
		fmt.Sscan(na[i], &x)
		fmt.Sscan(nb[i], &y)
		if x != y {
			return x > y
		}
	}
	if len(na) != len(nb) {
		return len(na) > len(nb)
	}
	return len(pa) == 1 && len(pb) == 2
}
