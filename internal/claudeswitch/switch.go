package claudeswitch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gemkit/gemkit/internal/claudeplugin"
	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
)

// Switch switches the Claude Code plugins of one person.
type Switch struct {
	Places
	// Settings is Claude Code's user settings file.
	Settings string
	// Gemkit is gemkit's program by its full path.
	Gemkit string
	// DataRoot is the folder of the extensions' servers' data folders
	// (gemkitdir.ExtensionData), where ${CLAUDE_PLUGIN_DATA} lies.
	DataRoot string
}

// New is the switch of the person whose home folder is home, with
// Claude Code's home claudeDir.
func New(home, claudeDir, gemkit string) *Switch {
	return &Switch{
		Places:   Places{Dir: gemkitdir.ClaudePlugins(home), Home: gemkitdir.ClaudePluginHome(home), Market: gemkitdir.ClaudePluginMarketplace(home)},
		Settings: filepath.Join(claudeDir, "settings.json"), Gemkit: gemkit, DataRoot: gemkitdir.ExtensionData(home),
	}
}

// Record is what the switch keeps of one switched plugin.
type Record struct {
	ID     string `json:"id"`
	Plugin string `json:"plugin"`
	Twin   string `json:"twin"`
	// Root is the plugin's folder, Digest what it held when the person
	// agreed; ClaudeDir Claude Code's home, where the plugin is found
	// again (an update installs it elsewhere).
	Root      string `json:"root"`
	ClaudeDir string `json:"claudeDir"`
	Digest    Digest `json:"digest"`
	// Settings is the file edited; Before its bytes before the first
	// switch (Missing: there was none), After those gemkit wrote.
	Settings string `json:"settings"`
	Before   []byte `json:"before,omitempty"`
	Missing  bool   `json:"missing,omitempty"`
	After    []byte `json:"after"`
	Prior    Prior  `json:"prior"`
	Edit     Edit   `json:"edit"`
}

// Records are the switched plugins, by id, and the twin names given.
type Records struct {
	Plugins map[string]*Record `json:"plugins"`
	// Names are the twin names given, each to the plugin it is of, kept
	// after the switch off so that no other plugin takes it.
	Names map[string]string `json:"names"`
}

func (s *Switch) recordsPath() string { return filepath.Join(s.Dir, "switched.json") }

// ReadRecords reads the records; none when there is no file.
func (s *Switch) ReadRecords() (*Records, error) { return readRecords(s.recordsPath()) }

func readRecords(path string) (*Records, error) {
	r := &Records{Plugins: map[string]*Record{}, Names: map[string]string{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Plugins == nil {
		r.Plugins = map[string]*Record{}
	}
	if r.Names == nil {
		r.Names = map[string]string{}
	}
	return r, nil
}

func (s *Switch) writeRecords(r *Records) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(s.recordsPath(), append(data, '\n'), 0o600)
}

// Plan is a plugin ready to be switched: its twin converted, and what
// its folder holds now.
type Plan struct {
	Plugin *claudeplugin.Plugin
	Twin   *Twin
	Digest Digest
	// Ext is the twin extension's folder, once written.
	Ext string
}

// Prepare converts p into its twin and writes the twin extension in TH,
// for the person to agree to; it refuses, in words, a plugin Claude Code
// and gemkit could read differently, one a project's settings enable
// (user settings cannot turn it off there), and one whose twin name is
// another's.
func (s *Switch) Prepare(p *claudeplugin.Plugin, userConfig map[string]string) (*Plan, error) {
	if p.Unreadable != "" {
		return nil, fmt.Errorf("%s is not read as Claude Code reads it: %s; not switched", extension.Printable(p.ID), extension.Printable(p.Unreadable))
	}
	for _, sc := range p.Enabled {
		if sc.Scope != "user" && (sc.Enabled || sc.Unreadable) {
			return nil, fmt.Errorf("%s is enabled in %s (%s scope), which Claude Code's user settings cannot turn off: not switched. Remove it from enabledPlugins there (or set it false), then switch again", extension.Printable(p.ID), sc.File, sc.Scope)
		}
	}
	recs, err := s.ReadRecords()
	if err != nil {
		return nil, err
	}
	// Claude Code's settings must take the edit before anything is
	// agreed to or switched.
	if v, _, _, err := readSettings(s.Settings); err != nil {
		return nil, err
	} else if _, _, err := apply(s.Settings, v, Edit{ID: p.ID, Twin: TwinID(p.Name), Market: s.Market}); err != nil {
		return nil, err
	}
	x := TwinName(p.Name, p.Marketplace)
	if other, ok := recs.Names[x]; ok && other != p.ID {
		return nil, fmt.Errorf("%s and %s both make the twin name %s: not switched (switch %s off and forget it first)", extension.Printable(p.ID), extension.Printable(other), x, extension.Printable(other))
	}
	r, err := fsutil.OpenRoot(p.Root)
	if err != nil {
		return nil, fmt.Errorf("the plugin's folder: %w", err)
	}
	defer r.Close()
	d, err := ReadDigest(r)
	if err != nil {
		return nil, err
	}
	vars := Vars{Data: filepath.Join(s.DataRoot, x), UserConfig: userConfig}
	t, err := Convert(r, Input{Plugin: p.Name, Market: p.Marketplace, Home: s.Home, Gemkit: s.Gemkit, Vars: vars})
	if err != nil {
		return nil, err
	}
	ext, err := s.WriteExtension(r, t)
	if err != nil {
		return nil, err
	}
	// The copy is what the digest saw only if nothing changed meanwhile.
	if now, err := ReadDigest(r); err != nil || d.Changes(now) != "" {
		return nil, fmt.Errorf("the plugin's folder changed while gemkit copied it (%s): not switched; try again once Claude Code is done with it", cmpStr(d.Changes(now), fmt.Sprint(err)))
	}
	return &Plan{Plugin: p, Twin: t, Digest: d, Ext: ext}, nil
}

// On is what switching a plugin on changed in Claude Code's settings.
type On struct {
	Settings string
	Denied   []string
}

// Enable finishes the switch of plan, once the person agreed and the
// extension switch took the twin: it writes the twin plugin in TM, edits
// Claude Code's user settings (the bytes it replaced kept), and records
// the plugin's digest.
func (s *Switch) Enable(plan *Plan) (On, error) {
	p, t := plan.Plugin, plan.Twin
	unlock, err := s.lock()
	if err != nil {
		return On{}, err
	}
	defer unlock()
	if err := s.WritePlugin(plan.Ext, p.Name, t); err != nil {
		return On{}, err
	}
	recs, err := s.ReadRecords()
	if err != nil {
		return On{}, err
	}
	e := Edit{ID: p.ID, Twin: TwinID(p.Name), Market: s.Market}
	for _, n := range t.Servers {
		e.Deny = append(e.Deny, "plugin:"+p.Name+":"+n)
	}
	v, data, missing, err := readSettings(s.Settings)
	if err != nil {
		return On{}, err
	}
	after, prior, err := apply(s.Settings, v, e)
	if err != nil {
		return On{}, err
	}
	rec := &Record{ID: p.ID, Plugin: p.Name, Twin: t.Name, Root: p.Root, ClaudeDir: filepath.Dir(s.Settings), Digest: plan.Digest, Settings: s.Settings, Before: data, Missing: missing, After: after, Prior: prior, Edit: e}
	if old, ok := recs.Plugins[p.ID]; ok && old.Settings == s.Settings {
		// Switched before: what the first switch replaced stays what
		// the switch off gives back.
		rec.Before, rec.Missing, rec.Prior = old.Before, old.Missing, mergePrior(old.Prior, prior)
	}
	if !bytes.Equal(after, data) || missing {
		if err := os.MkdirAll(filepath.Dir(s.Settings), 0o700); err != nil {
			return On{}, err
		}
		if err := writeSettings(s.Settings, after); err != nil {
			return On{}, err
		}
	}
	recs.Plugins[p.ID], recs.Names[t.Name] = rec, p.ID
	return On{Settings: s.Settings, Denied: e.Deny}, s.writeRecords(recs)
}

// mergePrior is what was there before the first of two switches: old's,
// with the denials now added too.
func mergePrior(old, now Prior) Prior {
	old.Denied = append(old.Denied, now.Denied...)
	return old
}

// Off is what switching a plugin off did.
type Off struct {
	// Restored: the settings file is byte for byte what it was before
	// the switch; else Structural: only gemkit's edits were taken out,
	// the person having changed the file since.
	Restored, Structural bool
	Settings             string
	Twin                 string
}

// Disable takes the switch of the plugin id out of Claude Code: its
// settings restored (byte for byte when the person has not changed them
// since, else only gemkit's edits undone), its twin plugin removed from
// TM. The caller switches the twin extension off.
func (s *Switch) Disable(id string) (Off, error) {
	unlock, err := s.lock()
	if err != nil {
		return Off{}, err
	}
	defer unlock()
	recs, err := s.ReadRecords()
	if err != nil {
		return Off{}, err
	}
	rec, ok := recs.Plugins[id]
	if !ok {
		return Off{}, fmt.Errorf("%s is not switched to gemkit", extension.Printable(id))
	}
	out := Off{Settings: rec.Settings, Twin: rec.Twin}
	now, err := os.ReadFile(rec.Settings)
	switch {
	case err == nil && bytes.Equal(now, rec.After) && rec.Missing:
		err, out.Restored = os.Remove(rec.Settings), true
	case err == nil && bytes.Equal(now, rec.After):
		err, out.Restored = writeSettings(rec.Settings, rec.Before), true
	case err == nil || errors.Is(err, fs.ErrNotExist):
		err = s.undoEdit(rec, recs)
		out.Structural = true
	}
	if err != nil {
		return out, err
	}
	if err := s.Remove(rec.Plugin); err != nil {
		return out, err
	}
	delete(recs.Plugins, id)
	inherit(recs, rec)
	return out, s.writeRecords(recs)
}

// inherit hands what rec's switch made in its settings file (the keys,
// gemkit's marketplace) to the plugins still switched there: the last
// of them to go takes it out.
func inherit(recs *Records, rec *Record) {
	for _, r := range recs.Plugins {
		if r.Settings != rec.Settings {
			continue
		}
		r.Prior.Market = r.Prior.Market || rec.Prior.Market
		for _, k := range rec.Prior.Created {
			if !slices.Contains(r.Prior.Created, k) {
				r.Prior.Created = append(r.Prior.Created, k)
			}
		}
	}
}

// undoEdit undoes rec's edit of a settings file the person changed.
func (s *Switch) undoEdit(rec *Record, recs *Records) error {
	v, _, missing, err := readSettings(rec.Settings)
	if err != nil || missing {
		return err
	}
	keep := false
	for id, r := range recs.Plugins {
		keep = keep || (id != rec.ID && r.Settings == rec.Settings)
	}
	return writeSettings(rec.Settings, undo(v, rec.Edit, rec.Prior, keep))
}

// Status is where a plugin's parts run now, as list, describe and
// doctor say it.
type Status struct {
	Switched bool
	Twin     string
	// Held says why the twin is held ("" when it is not): the plugin's
	// files changed since the person agreed.
	Held string
}

// Runs words the status.
func (st Status) Runs() string {
	switch {
	case st.Held != "":
		return "held: " + st.Held
	case st.Switched:
		return "in gemkit's sandbox"
	}
	return claudeplugin.Runs
}

// StatusOf says where the plugin p's parts run now.
func (s *Switch) StatusOf(recs *Records, p *claudeplugin.Plugin) Status {
	rec, ok := recs.Plugins[p.ID]
	if !ok {
		return Status{}
	}
	return Status{Switched: true, Twin: rec.Twin, Held: rec.heldWhy()}
}

// heldWhy says why the twin of rec is held: the plugin is no longer
// installed in Claude Code, or its files (where Claude Code runs it from
// now) are not what the person agreed to; "" when they are.
func (rec *Record) heldWhy() string {
	again := "nothing of it runs until you agree again: gemkit plugins sandbox " + extension.Printable(rec.ID)
	root, moved := rec.Root, ""
	if rec.ClaudeDir != "" {
		h, err := claudeplugin.List(rec.ClaudeDir, "")
		if err != nil {
			return fmt.Sprintf("Claude Code's plugins cannot be read (%v); %s", err, again)
		}
		p, err := h.Find(rec.ID)
		if err != nil {
			return "the plugin is no longer installed in Claude Code; " + again
		}
		if root = p.Root; root != rec.Root {
			moved = fmt.Sprintf(", and Claude Code runs it from %s now (version %s)", extension.Printable(root), extension.Printable(p.Version))
		}
	}
	r, err := fsutil.OpenRoot(root)
	if err != nil {
		return fmt.Sprintf("the plugin's folder %s cannot be read (%v); %s", extension.Printable(root), err, again)
	}
	defer r.Close()
	now, err := ReadDigest(r)
	if err != nil {
		return fmt.Sprintf("%v; %s", err, again)
	}
	if c := rec.Digest.Changes(now); c != "" || moved != "" {
		return fmt.Sprintf("the plugin changed since you agreed (%s%s): its twin keeps to what you agreed to and %s", cmpStr(c, "no file changed"), moved, again)
	}
	return ""
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Held says why gemkit holds the twin extension x of the plugin home
// home (TH): "" when it is not held or is no twin. gemkit mcp --only and
// the hook runner ask it at each start.
func Held(home, x string) string {
	recs, err := readRecords(filepath.Join(filepath.Dir(home), "switched.json"))
	if err != nil {
		return err.Error()
	}
	for _, rec := range recs.Plugins {
		if rec.Twin == x {
			return rec.heldWhy()
		}
	}
	return ""
}

// Switched are the ids of the switched plugins, sorted.
func (r *Records) Switched() []string {
	var out []string
	for id := range r.Plugins {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Annotate says in each plugin of h where its parts run now
// (Status.Runs), and leaves out the twins, which are gemkit's own: the
// plugin each is of says it runs in gemkit's sandbox.
func (s *Switch) Annotate(h *claudeplugin.Home) error {
	recs, err := s.ReadRecords()
	if err != nil {
		return err
	}
	out := h.Plugins[:0]
	for i := range h.Plugins {
		p := &h.Plugins[i]
		if p.Marketplace == Marketplace {
			continue
		}
		p.Runs = s.StatusOf(recs, p).Runs()
		out = append(out, *p)
	}
	h.Plugins = out
	return nil
}

// Show writes the plugins Claude Code's home claudeDir holds (read with
// the project's settings), or the one id names, each with where its
// parts run now (Annotate); as JSON with asJSON.
func (s *Switch) Show(w io.Writer, claudeDir, project, id string, asJSON bool) error {
	h, err := claudeplugin.List(claudeDir, project)
	if err != nil {
		return err
	}
	if err := s.Annotate(h); err != nil {
		return err
	}
	out := bufio.NewWriter(w)
	defer out.Flush()
	var v any = h
	if id != "" {
		p, err := h.Find(id)
		if err != nil {
			return err
		}
		if v = p; !asJSON {
			return claudeplugin.WriteDescribe(out, p)
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	return claudeplugin.WriteList(out, h)
}

// ForPerson is the switch of the person of the environment getenv
// (HOME, CLAUDE_CONFIG_DIR) working in cwd, with gemkit's program
// gemkit, and Claude Code's home.
func ForPerson(getenv func(string) string, cwd, gemkit string) (*Switch, string) {
	dir := claudeplugin.Folder(getenv, getenv("HOME"), cwd)
	return New(getenv("HOME"), dir, gemkit), dir
}
