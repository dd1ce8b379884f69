package extmcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/mcpclient"
)

// A client may ask gemkit mcp to complete an argument of a server's
// prompt or resource template (completion/complete); gemkit passes it on
// to that server (Complete). gemkit mcp declares the completions
// capability only when a server it serves offers it (Completions). Its
// servers start at their first use, after initialize, so what each
// declared the last time it started is kept in a file (CapabilitiesPath),
// by a fingerprint of what starts it: a gemkit mcp that has not started
// a server yet knows from there whether it offers completions.

// Complete passes a completion/complete of a prompt or resource template
// of the server key on to it, with req's Ref as the server names it, as
// Call calls a tool; a server that does not declare completions is an
// error in words.
func (m *Manager) Complete(ctx context.Context, key string, req mcpclient.Completion) (json.RawMessage, error) {
	s, err := m.server(key)
	if err != nil {
		return nil, err
	}
	what := "completion/complete of the argument " + Printable(req.Name) + " of the prompt " + Printable(req.Ref.Name)
	if req.Ref.Type == mcpclient.RefResource {
		what = "completion/complete of the argument " + Printable(req.Name) + " of the resource " + Printable(req.Ref.URI)
	}
	return s.request(ctx, what, func(ctx context.Context, r *running) (json.RawMessage, error) {
		if !r.caps.Completions || r.lacks.has(methodComplete) {
			return nil, errors.New("it does not offer completions (its initialize answer declares no completions capability, or it answered that it has no such method)")
		}
		raw, err := r.client.CompleteRaw(ctx, req)
		if mcpclient.MethodNotFound(err) && r.lacks.add(methodComplete) {
			// Declared, and lacking: not offered any more, here nor by
			// the next gemkit mcp, which reads what it declared.
			caps := r.caps
			caps.Completions = false
			s.remember(caps)
		}
		return raw, err
	})
}

const methodComplete = "completion/complete"

// Completions reports whether a server the Manager has offers
// completions: as it declared when it started in this process, else as
// it declared the last time gemkit started it (the capabilities file),
// while it is started the same way.
func (m *Manager) Completions() bool {
	all := m.all()
	var kept map[string]keptCaps
	read := false
	for _, s := range all {
		if c := s.declared.Load(); c != nil {
			if c.Completions {
				return true
			}
			continue
		}
		if !read {
			kept, read = m.readCaps(), true
		}
		if k, ok := kept[s.spec.capsKey()]; ok && k.Start == s.spec.fingerprint() && k.Completions {
			return true
		}
	}
	return false
}

// keptCaps is what a server declared the last time gemkit started it.
type keptCaps struct {
	// Start is the fingerprint of what started it (Spec.fingerprint).
	Start       string `json:"start"`
	Completions bool   `json:"completions"`
}

// CapabilitiesPath is the file of what the servers declared
// (~/.local/share/gemkit/server-capabilities.json), beside the
// refusals.
func CapabilitiesPath(env map[string]string) (string, error) {
	root, err := DataRoot(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(root), "server-capabilities.json"), nil
}

func (m *Manager) capsPath() (string, error) {
	if m.cfg.Capabilities != "" {
		return m.cfg.Capabilities, nil
	}
	return CapabilitiesPath(envmap.Of(m.cfg.Environ))
}

// readCaps reads the capabilities file, by Spec.capsKey; a missing or
// unreadable file is nothing known.
func (m *Manager) readCaps() map[string]keptCaps {
	out := map[string]keptCaps{}
	path, err := m.capsPath()
	if err != nil {
		return out
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	if err := json.Unmarshal(b, &out); err != nil {
		m.log.Debug("the servers' capabilities file cannot be read; starting it afresh", "path", path, "err", err)
		return map[string]keptCaps{}
	}
	return out
}

// remember records what s declared when it started (s.declared), in the
// process and, when it changed, in the capabilities file (0600, written
// atomically). Two gemkit processes writing at once each write a whole
// file, and the last one wins.
func (s *server) remember(caps mcpclient.Capabilities) {
	s.declared.Store(&caps)
	m := s.m
	m.capsMu.Lock()
	defer m.capsMu.Unlock()
	kept := m.readCaps()
	now := keptCaps{Start: s.spec.fingerprint(), Completions: caps.Completions}
	if kept[s.spec.capsKey()] == now {
		return
	}
	kept[s.spec.capsKey()] = now
	if err := m.writeCaps(kept); err != nil {
		m.log.Debug("keeping the servers' capabilities", "err", err)
	}
}

func (m *Manager) writeCaps(kept map[string]keptCaps) error {
	path, err := m.capsPath()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// capsKey is the spec's key in the capabilities file.
func (s Spec) capsKey() string { return s.Extension + "/" + s.Label() }

// fingerprint identifies what starts the server (its folder, command
// and arguments, or its URL and transport), not the values of its
// settings, which the capabilities file must not hold even hashed.
func (s Spec) fingerprint() string {
	sum := sha256.Sum256([]byte(strings.Join(append([]string{s.Dir, s.Command, s.URL, s.Transport}, s.Args...), "\x00")))
	return hex.EncodeToString(sum[:])
}
