// Package runtimedir names gemkit's runtime folder (gemkitdir re-exports
// it as Runtime, TempRuntime and RuntimeFor), apart from package
// gemkitdir so that `gemkit extensions hook`'s warm client (package
// hookclient) can find it before the rest of gemkit initializes: it
// imports only early parts of the standard library. Go initializes a
// package once all it imports is, the lexically first of those ready
// first, so path/filepath, which gemkitdir uses, comes after every
// github.com and golang.org package that is ready before it.
package runtimedir

import "strconv"

// Name is the folder's name under each base folder ("gemkit").
const Name = "gemkit"

// Runtime is gemkit's folder in the runtime folder runtime
// ($XDG_RUNTIME_DIR): runtime/gemkit.
func Runtime(runtime string) string { return join(runtime, Name) }

// TempRuntime stands for Runtime where there is no runtime folder: the
// user's own gemkit-<uid> in the temporary folder tmp.
func TempRuntime(tmp string, uid int) string {
	return join(tmp, Name+"-"+strconv.Itoa(uid))
}

// For is the runtime folder of user uid's gemkit processes whose
// runtime folder is runtime ($XDG_RUNTIME_DIR, "" when unset or not
// absolute) and temporary folder tmp: Runtime, else TempRuntime. A
// socket's path must fit in sun_path (104 bytes on macOS, 108 on Linux),
// so a long one gives way to /tmp's.
func For(runtime, tmp string, uid int) string {
	var dir string
	if runtime != "" && isAbs(runtime) {
		dir = Runtime(runtime)
	} else {
		dir = TempRuntime(tmp, uid)
	}
	if len(dir) > 60 {
		dir = TempRuntime("/tmp", uid)
	}
	return dir
}

// clean is filepath.Clean for paths separated by '/': one slash
// between names, no "." and no ".." but at the start of a relative
// path, "." for nothing.
func clean(p string) string {
	rooted := len(p) > 0 && p[0] == '/'
	var out []string
	for _, e := range split(p) {
		switch {
		case e == "" || e == ".":
		case e != "..":
			out = append(out, e)
		case len(out) > 0 && out[len(out)-1] != "..":
			out = out[:len(out)-1]
		case !rooted:
			out = append(out, "..")
		}
	}
	var s string
	for i, e := range out {
		if i > 0 {
			s += "/"
		}
		s += e
	}
	switch {
	case rooted:
		return "/" + s
	case s == "":
		return "."
	}
	return s
}

// split is p's names between slashes, empty ones too (strings.Split: the
// package imports no strings, whose unicode tables hookclient's init
// would wait for).
func split(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}
