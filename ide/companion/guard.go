package companion

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/jsonrpc"
	"github.com/gemkit/gemkit/internal/permission"
)

// guard checks every request before any route sees it. A connection that
// came through an extension tool's sandbox proxy is refused first, token
// or not (see sandboxProxied). Then, in the order the official companion
// does (gemini-cli 0.61.0 packages/vscode-ide-companion/src/ide-server.ts):
// a browser (any Origin header) is refused, then a foreign Host (DNS
// rebinding), then a missing or wrong bearer token. Request bodies are
// bounded by ide.MaxRequestBody.
//
// A refused request's body is never read and its connection is closed. An
// authorised request's body must arrive within bodyReadTimeout, and its
// connection leaves the bound on unauthorised connections (see
// guardedListener).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := refusal(r, s.hosts); msg != "" {
			refuse(w, http.StatusForbidden, msg)
			return
		}
		if !authorized(r.Header.Get("Authorization"), s.authz) {
			refuse(w, http.StatusUnauthorized, "unauthorized: missing or wrong bearer token")
			return
		}
		if r.ContentLength > ide.MaxRequestBody {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", ide.MaxRequestBody))
			return
		}
		if c := connOf(r); c != nil {
			c.authorised()
		}
		rc := http.NewResponseController(w)
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
			r.Body = &deadlineBody{body: r.Body, rc: rc}
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, ide.MaxRequestBody)
		}
		next.ServeHTTP(w, r)
	})
}

// sandboxProxied reports whether r came through the proxy of an extension
// tool's sandbox, which dials this machine's loopback from an address of
// its own (permission.ProxySource): a tool allowed "localhost" that
// somehow learnt this server's token must still not write files or open
// diffs through it.
func sandboxProxied(r *http.Request) bool { return permission.FromSandbox(r.RemoteAddr) }

// sandboxRefusal is the answer to a request from inside a tool's sandbox.
const sandboxRefusal = "request refused: it came through an extension tool's sandbox, which may not reach the IDE companion"

// hashAuthorization makes header values of any length comparable in
// constant time.
func hashAuthorization(v string) [32]byte { return sha256.Sum256([]byte(v)) }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ide.MCPPath, s.mcp)
	mux.HandleFunc(ide.KeepAlivePath, s.handleKeepAlive)
	mux.HandleFunc(ide.WriteFilePath, s.handleWriteFile)
	mux.HandleFunc(StreamPath, s.handleStream)
	mux.HandleFunc(ide.LSPPath, s.handleLSP)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, "not found: "+r.URL.Path)
	})
	return mux
}

func (s *Server) handleKeepAlive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeJSONError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"version": s.cfg.Version})
}

// writeFileRequest is the body of POST /write-file.
type writeFileRequest struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

// handleWriteFile writes a file inside a workspace folder atomically and
// then tells the editor, so that it reloads the file.
func (s *Server) handleWriteFile(w http.ResponseWriter, r *http.Request) {
	body, ok := postBody(w, r, func(status int, msg string) { writeJSONError(w, status, msg) })
	if !ok {
		return
	}
	// Checked before decoding: encoding/json would turn each bad byte
	// into U+FFFD and the file would be written changed.
	if err := jsonrpc.CheckJSONText(body); err != nil {
		s.log.Warn("write-file refused", "err", err)
		writeJSONError(w, http.StatusBadRequest, "refused: "+err.Error())
		return
	}
	var req writeFileRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"path\": string, \"content\": string}: "+err.Error())
		return
	}
	if req.Path == "" || req.Content == nil {
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"path\": string, \"content\": string}: both fields are required")
		return
	}
	root, target, status, err := resolveInWorkspace(req.Path, s.workspaceSnapshot())
	if err != nil {
		writeJSONError(w, status, err.Error())
		return
	}
	if err := writeInRoot(root, target, []byte(*req.Content)); err != nil {
		s.log.Error("write-file failed", "path", target, "err", err)
		writeJSONError(w, http.StatusInternalServerError, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.EditorTimeout)
	defer cancel()
	if err := s.editor.FileWritten(ctx, filepath.Clean(req.Path)); err != nil {
		s.log.Warn("telling the editor about a written file", "path", req.Path, "err", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
}

// postBody reads the body of a POST to one of the routes. Another method
// it answers itself (405); a body it cannot read is answered through
// fail, in the route's own shape: 413 when the body is larger than
// ide.MaxRequestBody, else 400.
func postBody(w http.ResponseWriter, r *http.Request, fail func(status int, msg string)) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSONError(w, http.StatusMethodNotAllowed, "use POST")
		return nil, false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", ide.MaxRequestBody))
		} else {
			fail(http.StatusBadRequest, "cannot read the request body: "+err.Error())
		}
		return nil, false
	}
	return body, true
}

// resolveInWorkspace returns the real path that writing p would change,
// with every symlink resolved, and the real path of the workspace folder
// holding it. It refuses (with an HTTP status) any path that is relative,
// a directory, or that lands outside every workspace folder once resolved.
func resolveInWorkspace(p string, workspace []string) (root, target string, status int, err error) {
	target, status, err = resolveTarget(p)
	if err != nil {
		return "", "", status, err
	}
	for _, ws := range workspace {
		real, err := filepath.EvalSymlinks(ws)
		if err != nil {
			continue
		}
		if fsutil.StrictlyWithin(real, target) {
			return real, target, http.StatusOK, nil
		}
	}
	return "", "", http.StatusForbidden, fmt.Errorf("refused: %s is outside the workspace folders (%s)", p, strings.Join(workspace, string(os.PathListSeparator)))
}

// resolveTarget resolves the symlinks of the deepest existing part of p.
func resolveTarget(p string) (string, int, error) {
	if !filepath.IsAbs(p) {
		return "", http.StatusBadRequest, fmt.Errorf("path %q is not absolute", p)
	}
	p = filepath.Clean(p)
	// Find the deepest part of p that exists, and resolve it.
	existing := p
	for {
		_, err := os.Lstat(existing)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", http.StatusBadRequest, fmt.Errorf("cannot inspect %s: %w", existing, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", http.StatusBadRequest, fmt.Errorf("no part of %s exists", p)
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("cannot resolve %s: %w", existing, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("cannot inspect %s: %w", real, err)
	}
	var target string
	if existing == p {
		if fi.IsDir() {
			return "", http.StatusBadRequest, fmt.Errorf("%s is a directory", p)
		}
		if !fi.Mode().IsRegular() {
			return "", http.StatusBadRequest, fmt.Errorf("%s is not a regular file", p)
		}
		target = real
	} else {
		if !fi.IsDir() {
			return "", http.StatusBadRequest, fmt.Errorf("%s is not a directory", existing)
		}
		rest, err := filepath.Rel(existing, p)
		if err != nil {
			return "", http.StatusBadRequest, err
		}
		target = filepath.Join(real, rest)
	}
	return target, http.StatusOK, nil
}

// writeInRoot writes data to target, a path inside the directory root,
// through a temporary file in the same directory and a rename, keeping the
// mode of the file it replaces (0644 for a new file) and creating missing
// parent directories. Every step goes through os.Root, so a symlink
// swapped in meanwhile still cannot lead the write out of root.
func writeInRoot(root, target string, data []byte) error {
	rel, err := filepath.Rel(root, target)
	if err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	defer r.Close()
	perm := os.FileMode(0o644)
	if fi, err := r.Stat(rel); err == nil {
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(rel)
	if dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Join(root, dir), err)
		}
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(rel)+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			r.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil { // the umask may have narrowed it
		return fmt.Errorf("write %s: %w", target, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	if err := r.Rename(tmp, rel); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	ok = true
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// refusal says why a request is refused before its token is looked at,
// in the guard's order: it came through a tool's sandbox, from a browser
// (an Origin header), or for a Host other than hosts (DNS rebinding).
// "" lets it through. The guard of /mcp and Claude Code's endpoint both
// ask it.
func refusal(r *http.Request, hosts [2]string) string {
	if sandboxProxied(r) {
		return sandboxRefusal
	}
	if _, ok := r.Header["Origin"]; ok {
		return "request refused: requests with an Origin header are not allowed"
	}
	if r.Host != hosts[0] && r.Host != hosts[1] {
		return "request refused: invalid Host header"
	}
	return ""
}

// authorized reports whether header is the one whose SHA-256 is authz,
// compared in constant time.
func authorized(header string, authz [32]byte) bool {
	got := hashAuthorization(header)
	return subtle.ConstantTimeCompare(got[:], authz[:]) == 1
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
