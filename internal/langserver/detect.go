package langserver

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxDetect bounds the entries looked at to find the workspace's
// languages.
const maxDetect = 20000

// skipDirs are folders whose files are not the workspace's own code:
// dependencies, build output, caches.
var skipDirs = map[string]bool{
	"node_modules": true, "vendor": true, "target": true, "build": true, "dist": true, "out": true,
	"__pycache__": true, "venv": true, "bower_components": true,
}

// detect returns the file extensions (lower case, with the dot) found in
// the workspace, and the root markers present at its top, looking at
// most at maxDetect entries, without hidden folders or skipDirs.
func detect(root string) (exts map[string]bool, markers map[string]bool) {
	exts, markers = map[string]bool{}, map[string]bool{}
	if ents, err := os.ReadDir(root); err == nil {
		for _, e := range ents {
			markers[e.Name()] = true
		}
	}
	seen := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		seen++
		if seen > maxDetect {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := strings.ToLower(filepath.Ext(d.Name())); ext != "" {
			exts[ext] = true
		}
		return nil
	})
	return exts, markers
}

// present returns the table's servers whose language the workspace holds
// (a file with one of its extensions, or one of its root markers), in
// table order, one per language id set: the first on PATH among those
// serving the same extensions.
func present(table []Server, exts, markers map[string]bool) []Server {
	var out []Server
	for _, s := range table {
		has := false
		for ext := range s.Extensions {
			has = has || exts[ext]
		}
		for _, m := range s.RootMarkers {
			has = has || markers[m]
		}
		if has {
			out = append(out, s)
		}
	}
	return out
}
