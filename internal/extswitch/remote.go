package extswitch

import (
	"fmt"
	"slices"

	"github.com/gemkit/gemkit/internal/extension"
)

// An extension with remote servers only is not switched (its remote
// servers stay Gemini CLI's unless a stdio server goes with them), but
// gemkit mcp --extension-servers reaches an address of this computer or
// of a private network for it (extmcp's rule, the proxy's) only when
// the person allowed that host and port by name, agreed to with the
// extension's consent.

// RemoteWidening is the hosts asked for an extension with remote
// servers only, before the person agrees.
type RemoteWidening struct {
	// Next is its choice with the widening asked for.
	Next extension.ServerChoice
	// State is where consent to it stands.
	State extension.ConsentState
	// Asks: the person must agree (consent not given, or the widening
	// widens what was agreed to).
	Asks bool
}

// WidenRemote reads the widening of ext's remote servers to hosts, on
// top of what was allowed, or of nothing with fresh.
func (s *Switch) WidenRemote(ext *extension.Extension, hosts []string, fresh bool) (*RemoteWidening, error) {
	old, err := s.Store.ServerChoice(ext.Manifest.Name)
	if err != nil {
		return nil, err
	}
	w := old.Widening
	if fresh {
		w = extension.Widening{}
	}
	w.Hosts = append(slices.Clone(w.Hosts), hosts...)
	if w, err = w.Canonical(); err != nil {
		return nil, fmt.Errorf("--allow-host: %w", err)
	}
	rw := &RemoteWidening{Next: old}
	rw.Next.Widening = w
	if rw.State, err = s.Store.Consent(ext); err != nil {
		return nil, err
	}
	rw.Asks = !rw.State.Granted || Widens(old.Widening, w)
	return rw, nil
}

// RecordRemote records rw's widening of the extension name, and consent to it
// as it is now.
func (s *Switch) RecordRemote(name string, rw *RemoteWidening) error {
	if err := s.Store.UpdateServerChoice(name, func(c *extension.ServerChoice, _ *[]string) { c.Widening = rw.Next.Widening }); err != nil {
		return err
	}
	return s.Store.RecordConsentContent(name, rw.State.Hash, rw.State.Content)
}
