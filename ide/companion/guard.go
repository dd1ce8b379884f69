package companion

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/ide"
)

// guard checks every request before any route sees it, in the order the
// official companion does: a browser (any Origin header) is refused, then
// a foreign Host (DNS rebinding), then a missing or wrong bearer token.
// Request bodies are bounded by ide.MaxRequestBody.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Header["Origin"]; ok {
			writeJSONError(w, http.StatusForbidden, "request refused: requests with an Origin header are not allowed")
			return
		}
		if r.Host != s.hosts[0] && r.Host != s.hosts[1] {
			writeJSONError(w, http.StatusForbidden, "request refused: invalid Host header")
			return
		}
		got := hashAuthorization(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got[:], s.authz[:]) != 1 {
			writeJSONError(w, http.StatusUnauthorized, "unauthorized: missing or wrong bearer token")
			return
		}
		if r.ContentLength > ide.MaxRequestBody {
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", ide.MaxRequestBody))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, ide.MaxRequestBody)
		}
		next.ServeHTTP(w, r)
	})
}

// hashAuthorization makes header values of any length comparable in
// constant time.
func hashAuthorization(v string) [32]byte { return sha256.Sum256([]byte(v)) }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ide.MCPPath, s.mcp)
	mux.HandleFunc(ide.KeepAlivePath, s.handleKeepAlive)
	mux.HandleFunc(ide.WriteFilePath, s.handleWriteFile)
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
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSONError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	var req writeFileRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSONError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", ide.MaxRequestBody))
			return
		}
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"path\": string, \"content\": string}: "+err.Error())
		return
	}
	if req.Path == "" || req.Content == nil {
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"path\": string, \"content\": string}: both fields are required")
		return
	}
	target, status, err := resolveInWorkspace(req.Path, s.workspaceSnapshot())
	if err != nil {
		writeJSONError(w, status, err.Error())
		return
	}
	if err := writeFileKeepMode(target, []byte(*req.Content)); err != nil {
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

// resolveInWorkspace returns the real path that writing p would change,
// with every symlink resolved, and refuses (with an HTTP status) any path
// that is relative, a directory, or that lands outside every workspace
// folder once resolved.
func resolveInWorkspace(p string, workspace []string) (string, int, error) {
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
	for _, ws := range workspace {
		root, err := filepath.EvalSymlinks(ws)
		if err != nil {
			continue
		}
		if within(root, target) {
			return target, http.StatusOK, nil
		}
	}
	return "", http.StatusForbidden, fmt.Errorf("refused: %s is outside the workspace folders (%s)", p, strings.Join(workspace, string(os.PathListSeparator)))
}

// within reports whether target lies strictly inside dir.
func within(dir, target string) bool {
	rel, err := filepath.Rel(dir, target)
	if err != nil || rel == "." || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// writeFileKeepMode writes data to path through a temporary file in the
// same directory and a rename, keeping the mode of the file it replaces
// (0644 for a new file). Missing parent directories are created.
func writeFileKeepMode(path string, data []byte) error {
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
