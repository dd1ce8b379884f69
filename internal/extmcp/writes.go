package extmcp

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/errpath"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
)

// The sandbox cannot see a refused write: the kernel answers the server
// (EROFS where its root or a read-only bind refuses, EACCES where
// Landlock does), not gemkit. What gemkit can tell is what the server
// says: a call whose result is an error with those words, and whose
// arguments name a path the server may not write, is reported as a
// refused write of that path (with EACCES, which Landlock answers a read
// too, only a path the error names and the server may read). A read of a
// closed path cannot be told
// apart from a missing file: the path is absent from the server's root,
// and it reads ENOENT as any missing file does.

// writeErrors are the words of a refused write in a server's error, as
// Node, Python and the C library print them, and how a refusal names
// them.
var writeErrors = [][2]string{
	{"erofs", "EROFS, read-only file system"}, {"read-only file system", "EROFS, read-only file system"},
	{"eacces", "EACCES, permission denied"}, {"permission denied", "EACCES, permission denied"},
}

// maxArgPaths bounds the paths taken from one call's arguments.
const maxArgPaths = 8

// refusedWrites are the writes a call's result says were refused: res
// is an error result with the words of a refused write, and args name
// absolute paths outside what the server may write (its data folder,
// its temp folder, and the workspace when allowed), or, when they name
// none, the error's text names a path of the extension's folder. Each
// is one Refusal; one in the workspace, while the servers may not write
// it, comes with the command that allows it. others are the other
// extensions' folders, read-only to it whatever is allowed.
func (s *server) refusedWrites(args, res json.RawMessage, data, tmp string, others []string) []Refusal {
	// res is as mcpclient encodes a result, compact: one that is not an
	// error, nearly every one, is not decoded again.
	if !bytes.Contains(res, []byte(`"isError":true`)) {
		return nil
	}
	var r struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if json.Unmarshal(res, &r) != nil || !r.IsError {
		return nil
	}
	var text strings.Builder
	for _, c := range r.Content {
		text.WriteString(c.Text)
		text.WriteString("\n")
	}
	lower := strings.ToLower(text.String())
	said := ""
	for _, w := range writeErrors {
		if strings.Contains(lower, w[0]) {
			said = w[1]
			break
		}
	}
	if said == "" {
		return nil
	}
	// EROFS answers only a write. EACCES answers a read Landlock refuses
	// as well (server-filesystem's read of a hidden path fails on
	// "scandir '/'"), so it is taken as a refused write only of a path
	// the error names and the server may read: the workspace or its
	// extension's folder.
	eacces := strings.HasPrefix(said, "EACCES")
	var a any
	_ = json.Unmarshal(args, &a)
	ws := s.m.cfg.Workspace
	workspace := s.spec.Widening.Write == permission.AccessWorkspace
	var out []Refusal
	for _, p := range argPaths(a, nil) {
		if fsutil.Within(data, p) || fsutil.Within(tmp, p) {
			continue
		}
		if eacces && (!strings.Contains(text.String(), p) || !fsutil.Within(ws, p) && s.ownCode(p) == "") {
			continue
		}
		ref := Refusal{At: time.Now(), Extension: s.spec.Extension, Server: s.spec.Label(), Path: p}
		switch {
		case s.ownCode(p) != "":
			// First: a linked extension's folder may lie in the
			// workspace, and stays read-only whatever is allowed.
			ref.Reason = ownCodeReason(s.ownCode(p), said, data, "")
		case other(others, s.spec.Dir, p) != "":
			// Another extension's code, linked from the workspace or
			// from anywhere: read-only to every sandboxed process, so
			// that no server rewrites what Gemini CLI or gemkit runs
			// for another extension.
			ref.Reason = "the folder of another extension (" + Printable(other(others, s.spec.Dir, p)) + "), read-only to every sandboxed process whatever is allowed; the call failed with " + said + ", naming this path"
		case fsutil.Within(ws, p) && !workspace:
			ref.Reason = "the workspace is read-only to its servers; the call failed with " + said + ", naming this path"
			ref.Allow = "gemkit extensions sandbox " + Printable(s.spec.Extension) + " --allow-write workspace"
		case fsutil.Within(ws, p):
			ref.Reason = "a protected path of the workspace, read-only whatever is allowed: .git, hooks, .env, editors' and agents' settings; the call failed with " + said + ", naming this path"
		default:
			ref.Reason = "outside what its servers may write, which is their data folder and the workspace when allowed; the call failed with " + said + ", naming this path"
		}
		out = append(out, ref)
	}
	if len(out) > 0 {
		return out
	}
	// A server that writes its state beside its own code (server-memory's
	// memory.jsonl beside its script) names no path in the call: the
	// error names it. A path of its code (the extension's folder, or the
	// tree its package was pinned in) is taken from there, and from
	// nowhere else, since no widening allows it: that code is what the
	// person agreed to, so it stays read-only.
	for _, p := range textPaths(text.String()) {
		if what := s.ownCode(p); what != "" {
			out = append(out, Refusal{At: time.Now(), Extension: s.spec.Extension, Server: s.spec.Label(), Path: p,
				Reason: ownCodeReason(what, said, data, " in its error")})
		}
	}
	return out
}

// ownCode names the code of the server's that holds p, read-only to it
// whatever is allowed: "its extension's folder", or, for a package
// runner's server, "the tree gemkit pinned its package in", which is
// where such a server's own files are (server-memory started with npx
// keeps its memory.jsonl beside its script there); "" for neither.
func (s *server) ownCode(p string) string {
	switch {
	case fsutil.Within(s.spec.Dir, p):
		return "its extension's folder"
	case s.spec.Tree != "" && fsutil.Within(s.spec.Tree, p):
		return "the tree gemkit pinned its package in"
	}
	return ""
}

// other is the folder among others, not own, that holds p, or "".
func other(others []string, own, p string) string {
	for _, o := range others {
		if o != own && fsutil.Within(o, p) && !fsutil.Within(o, own) {
			return o
		}
	}
	return ""
}

// ownCodeReason is why a write in the server's own code (what, as
// ownCode names it) was refused, said is how the server's error put
// it, where names where the path was found, and what to do instead: no
// widening allows it.
func ownCodeReason(what, said, data, where string) string {
	return what + ", read-only to its servers whatever is allowed; the call failed with " + said +
		", naming this path" + where + "; a server writes what it keeps in its data folder, its HOME (" + data +
		"), when the manifest's entry points it there (an env value with $HOME)"
}

// textPaths are the absolute paths an error's text names
// (errpath.Paths: not the program's own name a line starts with),
// at most maxArgPaths.
func textPaths(text string) []string {
	out := errpath.Paths(text)
	return out[:min(len(out), maxArgPaths)]
}

// argPaths collects the absolute paths among the string values of a
// call's arguments, at most maxArgPaths.
func argPaths(v any, out []string) []string {
	if len(out) >= maxArgPaths {
		return out
	}
	switch v := v.(type) {
	case string:
		if filepath.IsAbs(v) && !strings.ContainsAny(v, "\n\x00") {
			out = append(out, filepath.Clean(v))
		}
	case []any:
		for _, e := range v {
			out = argPaths(e, out)
		}
	case map[string]any:
		for _, e := range v {
			out = argPaths(e, out)
		}
	}
	return out
}

// RefusedWritePaths are the absolute paths a program's error text names
// when it says a write was refused (EROFS, EACCES, in Node's, Python's
// and the C library's words, on the same line): what a hook's stderr
// tells of its refused writes, which the kernel answered to it and not
// to gemkit.
func RefusedWritePaths(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		lower := strings.ToLower(line)
		if !slices.ContainsFunc(writeErrors, func(w [2]string) bool { return strings.Contains(lower, w[0]) }) {
			continue
		}
		for _, p := range textPaths(line) {
			if !slices.Contains(out, p) && len(out) < maxArgPaths {
				out = append(out, p)
			}
		}
	}
	return out
}
