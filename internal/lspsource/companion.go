package lspsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gemkit/gemkit/ide"
	"github.com/gemkit/gemkit/internal/codeintel"
	"github.com/gemkit/gemkit/internal/jsonrpc"
)

// Bounds of one question to the editor.
const (
	// defaultTimeout bounds a request when its context has no deadline.
	defaultTimeout = 20 * time.Second
	// settleTimeout bounds the wait for diagnostics that are current.
	settleTimeout = 5 * time.Second
	// maxAnswer bounds the body read of one answer.
	maxAnswer = 32 << 20
)

// Companion is the Conn of an editor's language clients: the editor
// protocol's language requests, as JSON-RPC POSTed to its companion's
// ide.LSPPath (behind its bearer token). It is safe for concurrent use.
type Companion struct {
	url, auth string
	http      *http.Client
	// editor names the editor in answers ("Neovim").
	editor string
	// gone is set once the companion stopped answering: the Finder looks
	// again.
	gone atomic.Bool
	// lends is set to 1 once the editor answered a language request and
	// to -1 once it said it lends no clients (its front-end has none).
	lends atomic.Int32
	ids   atomic.Int64
}

var _ Conn = (*Companion)(nil)

// Editor names the editor ("Neovim"), as its companion's discovery file
// does.
func (s *Companion) Editor() string { return s.editor }

// Endpoint is where its companion answers (http://127.0.0.1:port/lsp).
func (s *Companion) Endpoint() string { return s.url }

// errGone marks a companion that no longer answers.
var errGone = errors.New("the editor's companion no longer answers")

// Call implements Conn: one language request to the companion, its
// result decoded into result.
func (s *Companion) Call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.ids.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", s.auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", s.editor, ctx.Err())
		}
		s.gone.Store(true)
		return &codeintel.NoServerError{Reason: fmt.Sprintf("%s's companion no longer answers (%v)", s.editor, err)}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%s's answer to %s: %w", s.editor, method, err)
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("%s's answer to %s is larger than %d MiB", s.editor, method, maxAnswer>>20)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		// A companion from before the route: no language clients to lend.
		s.lends.Store(-1)
		return &codeintel.NoServerError{Reason: fmt.Sprintf("%s's companion lends no language clients (it is older than the %s route)", s.editor, ide.LSPPath)}
	case http.StatusUnauthorized, http.StatusForbidden:
		s.gone.Store(true)
		return &codeintel.NoServerError{Reason: fmt.Sprintf("%s's companion refused gemkit's request (HTTP %d): its discovery file is stale", s.editor, resp.StatusCode)}
	default:
		return fmt.Errorf("%s's companion answered %s with HTTP %d: %s", s.editor, method, resp.StatusCode, clip(string(data)))
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return fmt.Errorf("%s's companion answered %s with something that is not JSON-RPC: %s", s.editor, method, clip(string(data)))
	}
	if msg.Error != nil {
		if msg.Error.Code == jsonrpc.CodeMethodNotFound {
			if method == ide.MethodLSPClients || method == ide.MethodLSPRequest {
				s.lends.Store(-1)
				return &codeintel.NoServerError{Reason: fmt.Sprintf("%s lends no language clients to gemkit (%s)", s.editor, msg.Error.Message)}
			}
			// A plugin that answers the questions but not this one.
			return fmt.Errorf("%s: %s: %w", s.editor, msg.Error.Message, codeintel.ErrUnsupported)
		}
		return fmt.Errorf("%s: %s", s.editor, msg.Error.Message)
	}
	s.lends.Store(1)
	if result != nil {
		if err := json.Unmarshal(msg.Result, result); err != nil {
			return fmt.Errorf("%s's answer to %s: %w", s.editor, method, err)
		}
	}
	return nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
