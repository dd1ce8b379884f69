package extension

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// A hold keeps Gemini CLI from running an extension switched to gemkit
// whose files changed since the person agreed to them: gemkit's own
// serving checks consent at every start, but Gemini CLI knows nothing
// of it, and runs what the extension brings besides the servers the
// switch excluded (a server the change added under a new name, its
// hooks, its agents' servers) with the person's rights.
//
// The hold is Gemini CLI's own extension enablement: a rule "!/*"
// (disabled in every folder) appended, last, to the extension's rules
// in ~/.gemini/extensions/extension-enablement.json, which Gemini CLI
// 0.61 reads when it builds each extension, before anything of it
// starts (ExtensionEnablementManager.isEnabled in
// ExtensionManager._buildExtension, packages/cli/src/config/
// extension-manager.ts; an inactive extension's servers are never
// discovered: maybeDiscoverMcpServer in packages/core/src/tools/
// mcp-client-manager.ts returns for !extension.isActive, and its hooks,
// agents, skills and context are left out with it). Gemini CLI keys the
// rules by the manifest's name, which the change may have rewritten: the
// hold names the extension's folder's name and the manifest's name as it
// is now. The person's own rules stay as they were; releasing removes
// exactly the rules the hold added.

// holdRule disables an extension in every folder.
const holdRule = "!/*"

// holdsFile keeps the holds gemkit placed, in gemkit's state folder.
const holdsFile = "holds.json"

// Hold is one extension held in Gemini CLI.
type Hold struct {
	// Names are the names the hold covers in Gemini CLI's enablement
	// (the extension's folder's name and its manifest's name when it
	// held); Added those whose rule gemkit appended (one the person
	// had already written last is theirs).
	Names []string `json:"names"`
	Added []string `json:"added,omitempty"`
	// Excluded are the server names the hold added to Gemini CLI's
	// mcp.excluded, Created the settings keys it made to hold them:
	// `gemini mcp list` starts the servers of a disabled extension all
	// the same (getMcpServersFromConfig in packages/cli/src/commands/mcp/
	// list.ts loads every extension, active or not), and honours
	// mcp.excluded.
	Excluded []string `json:"excluded,omitempty"`
	Created  []string `json:"created,omitempty"`
	// MadeFile: there was no enablement file before the hold, so that
	// releasing it leaves none if nothing else was written there since.
	MadeFile bool `json:"madeFile,omitempty"`
	// Why says why, in words; Since is when.
	Why   string    `json:"why"`
	Since time.Time `json:"since"`
	// Fix says how the hold ends when agreeing again does not end it (a
	// part gemkit cannot read as Gemini CLI will, or cannot put in its
	// sandbox); "" for a hold of a change, which the person's agreement
	// ends.
	Fix string `json:"fix,omitempty"`
}

type holdRecords struct {
	Version    int             `json:"version"`
	Extensions map[string]Hold `json:"extensions"`
}

func (s *Store) holdsPath() string { return filepath.Join(s.stateDir(), holdsFile) }

func (s *Store) readHolds() (holdRecords, error) {
	recs := holdRecords{Version: 1}
	err := readRecords(s.holdsPath(), "the extensions gemkit holds in Gemini CLI",
		"fix or delete it, then remove gemkit's \""+holdRule+"\" rules from "+s.enablementPath()+" by hand", &recs)
	if recs.Extensions == nil {
		recs.Extensions = map[string]Hold{}
	}
	return recs, err
}

// Holds are the extensions gemkit holds in Gemini CLI, by the name of
// their folder in the extensions folder.
func (s *Store) Holds() (map[string]Hold, error) {
	recs, err := s.readHolds()
	return recs.Extensions, err
}

// HoldInGemini holds the extension whose folder in the extensions folder
// is entry, under every name of names (entry's own among them), for
// why. It reports whether anything changed: holding again adds the
// names not yet held.
func (s *Store) HoldInGemini(entry string, names []string, why string) (bool, error) {
	return s.HoldInGeminiFor(entry, names, why, "")
}

// HoldInGeminiFor is HoldInGemini for a cause that agreeing again does
// not end, fix saying what does: a hold already placed takes why and fix
// as its own (the change it was placed for was agreed to since, this
// cause remains).
func (s *Store) HoldInGeminiFor(entry string, names []string, why, fix string) (bool, error) {
	unlock, err := s.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	recs, err := s.readHolds()
	if err != nil {
		return false, err
	}
	f, err := s.readEnablement()
	if err != nil {
		return false, err
	}
	h, held := recs.Extensions[entry]
	changed := !held
	if held && fix != "" && (h.Why != why || h.Fix != fix) {
		h.Why, h.Fix, changed = why, fix, true
	}
	if !held {
		h = Hold{Why: why, Fix: fix, Since: time.Now().UTC()}
		if _, err := os.Lstat(s.enablementPath()); os.IsNotExist(err) {
			h.MadeFile = true
		}
	}
	for _, n := range append([]string{entry}, names...) {
		if n == "" || slices.Contains(h.Names, n) {
			continue
		}
		changed = true
		h.Names = append(h.Names, n)
		cfg := f[n]
		if cfg == nil {
			cfg = &enablementConfig{}
			f[n] = cfg
		}
		if k := len(cfg.Overrides); k > 0 && cfg.Overrides[k-1] == holdRule {
			continue // the person's own, already last
		}
		cfg.Overrides = append(cfg.Overrides, holdRule)
		h.Added = append(h.Added, n)
	}
	if !changed {
		return false, nil
	}
	sort.Strings(h.Names)
	sort.Strings(h.Added)
	// The rules first: a hold recorded without them would be released
	// by removing the person's own.
	if err := s.writeEnablement(f); err != nil {
		return false, err
	}
	recs.Extensions[entry] = h
	return true, writeRecords(s.holdsPath(), "record the hold in Gemini CLI", recs)
}

// NoteHoldExclusions records that the hold of entry added names to
// Gemini CLI's mcp.excluded, making the settings keys created.
func (s *Store) NoteHoldExclusions(entry string, names, created []string) error {
	if len(names) == 0 && len(created) == 0 {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	recs, err := s.readHolds()
	if err != nil {
		return err
	}
	h, ok := recs.Extensions[entry]
	if !ok {
		return nil
	}
	for _, n := range names {
		if !slices.Contains(h.Excluded, n) {
			h.Excluded = append(h.Excluded, n)
		}
	}
	for _, k := range created {
		if !slices.Contains(h.Created, k) {
			h.Created = append(h.Created, k)
		}
	}
	sort.Strings(h.Excluded)
	recs.Extensions[entry] = h
	return writeRecords(s.holdsPath(), "record the hold in Gemini CLI", recs)
}

// ReleaseInGemini ends the hold of the extension whose folder is entry:
// the rules it added are removed (the last "!/*" of each name it added,
// so that one the person wrote too stays), the person's own rules stay.
// It returns the hold released, nil when there was none.
func (s *Store) ReleaseInGemini(entry string) (*Hold, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return s.releaseLocked(entry)
}

func (s *Store) releaseLocked(entry string) (*Hold, error) {
	recs, err := s.readHolds()
	if err != nil {
		return nil, err
	}
	h, ok := recs.Extensions[entry]
	if !ok {
		return nil, nil
	}
	f, err := s.readEnablement()
	if err != nil {
		return nil, err
	}
	for _, n := range h.Added {
		cfg := f[n]
		if cfg == nil {
			continue
		}
		for i := len(cfg.Overrides) - 1; i >= 0; i-- {
			if cfg.Overrides[i] == holdRule {
				cfg.Overrides = slices.Delete(cfg.Overrides, i, i+1)
				break
			}
		}
	}
	empty := true
	for _, cfg := range f {
		empty = empty && (cfg == nil || len(cfg.Overrides) == 0)
	}
	if h.MadeFile && empty {
		if err := os.Remove(s.enablementPath()); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	} else if err := s.writeEnablement(f); err != nil {
		return nil, err
	}
	delete(recs.Extensions, entry)
	if len(recs.Extensions) == 0 {
		if err := os.Remove(s.holdsPath()); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		return &h, nil
	}
	return &h, writeRecords(s.holdsPath(), "record the end of a hold in Gemini CLI", recs)
}
