package companion

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/httpguard"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// guardConfig is what the guard of the companion's port (internal/httpguard)
// checks, in the words its clients have always seen: the bearer token of
// the discovery file on every route, bodies up to ide.MaxRequestBody.
func (s *Server) guardConfig(token string) httpguard.Config {
	return httpguard.Config{
		Hosts:      s.hosts[:],
		Credential: "Bearer " + token,
		Limits:     s.limits(),
		Wording:    httpguard.Wording{FromSandbox: sandboxRefusal},
		ErrorLog:   slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
}

// limits are the bounds of the companion's port and of Claude Code's.
func (s *Server) limits() httpguard.Limits {
	return httpguard.Limits{
		MaxBody:            ide.MaxRequestBody,
		MaxUnauthenticated: s.cfg.MaxUnauthenticated,
		HeaderTimeout:      s.cfg.HeaderTimeout,
		BodyTimeout:        s.cfg.BodyTimeout,
	}
}

// sandboxRefusal is the answer to a request from inside a tool's sandbox.
const sandboxRefusal = "request refused: it came through an extension tool's sandbox, which may not reach the IDE companion"

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

// writeJSONError answers {"error": msg}, the shape of the guard's refusals.
func writeJSONError(w http.ResponseWriter, status int, msg string) {
	httpguard.WriteError(w, status, msg)
}
