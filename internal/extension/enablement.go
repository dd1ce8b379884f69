package extension

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Scope is where an enable or disable applies.
type Scope string

// The enablement scopes. A workspace rule overrides a user rule.
const (
	// ScopeUser applies to the home folder and everything under it, as in
	// Gemini CLI (so a workspace outside the home folder is not covered).
	ScopeUser Scope = "user"
	// ScopeWorkspace applies to the workspace folder and its sub-folders.
	ScopeWorkspace Scope = "workspace"
)

// ParseScope reads a --scope value.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeUser, ScopeWorkspace:
		return Scope(s), nil
	}
	return "", fmt.Errorf("unknown scope %q: use user or workspace", s)
}

// Enablement says whether an extension is enabled in each scope: User is
// the answer for the home folder, Workspace for the workspace folder. The
// workspace answer is the one that decides whether it runs there.
type Enablement struct {
	User      bool `json:"user"`
	Workspace bool `json:"workspace"`
}

// The enablement file maps an extension name to its rules. A rule is an
// absolute folder path with a leading and trailing slash, "!" in front to
// disable, "*" at the end to include sub-folders. The last rule that
// matches a folder decides; with none, the extension is enabled.
type enablementFile map[string]*enablementConfig

type enablementConfig struct {
	Overrides []string `json:"overrides"`
}

type rule struct {
	base    string
	disable bool
	subdirs bool
}

func parseRule(s string) rule {
	r := rule{base: s}
	if strings.HasPrefix(r.base, "!") {
		r.disable, r.base = true, r.base[1:]
	}
	if strings.HasSuffix(r.base, "*") {
		r.subdirs, r.base = true, strings.TrimSuffix(r.base, "*")
	}
	return r
}

func (r rule) String() string {
	s := r.base
	if r.disable {
		s = "!" + s
	}
	if r.subdirs {
		s += "*"
	}
	return s
}

// regex turns the rule into the regular expression Gemini CLI matches
// with: "*" (with the "/" before it) becomes an optional "/anything".
func (r rule) regex() *regexp.Regexp {
	glob := r.base
	if r.subdirs {
		glob += "*"
	}
	parts := strings.Split(glob, "*")
	var b strings.Builder
	b.WriteString("^")
	for i, p := range parts {
		if i < len(parts)-1 {
			if strings.HasSuffix(p, "/") {
				b.WriteString(regexp.QuoteMeta(strings.TrimSuffix(p, "/")))
				b.WriteString("(/.*)?")
			} else {
				b.WriteString(regexp.QuoteMeta(p))
				b.WriteString("(.*)?")
			}
		} else {
			b.WriteString(regexp.QuoteMeta(p))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func (r rule) matches(dir string) bool { return r.regex().MatchString(slashed(dir)) }

// childOf reports whether r sits under parent (which must include
// sub-folders).
func (r rule) childOf(parent rule) bool { return parent.subdirs && parent.regex().MatchString(r.base) }

// slashed gives a folder the leading and trailing slash rules are written
// with.
func slashed(dir string) string {
	d := filepath.ToSlash(dir)
	if !strings.HasPrefix(d, "/") {
		d = "/" + d
	}
	if !strings.HasSuffix(d, "/") {
		d += "/"
	}
	return d
}

func (s *Store) enablementPath() string { return filepath.Join(s.Dir(), EnablementFile) }

// personsEnablement is the enablement file as the person wrote it: the
// rules gemkit's holds appended (hold.go) are left out. A hold keeps
// Gemini CLI from running a switched extension's changed code; gemkit
// itself runs none of it without consent either, and says so in the
// extension's place (a placeholder tool, list, doctor) rather than
// taking it for one the person disabled.
func (s *Store) personsEnablement() (enablementFile, error) {
	f, err := s.readEnablement()
	if err != nil {
		return f, err
	}
	recs, err := s.readHolds()
	if err != nil {
		return f, nil // a damaged record: the rules read as written
	}
	for _, h := range recs.Extensions {
		for _, n := range h.Added {
			cfg := f[n]
			if cfg == nil {
				continue
			}
			if k := len(cfg.Overrides); k > 0 && cfg.Overrides[k-1] == holdRule {
				f[n] = &enablementConfig{Overrides: cfg.Overrides[:k-1]}
			}
		}
	}
	return f, nil
}

func (s *Store) readEnablement() (enablementFile, error) {
	data, err := os.ReadFile(s.enablementPath())
	if errors.Is(err, fs.ErrNotExist) {
		return enablementFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.enablementPath(), err)
	}
	f := enablementFile{}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v); fix or delete it", s.enablementPath(), err)
	}
	return f, nil
}

func enabledIn(cfg *enablementConfig, dir string) bool {
	return enabledWith(cfg, dir, func(r rule) *regexp.Regexp { return r.regex() })
}

// enabledWith applies Gemini CLI's rule: the last matching rule decides.
// regex compiles a rule, so callers answering many questions can cache.
func enabledWith(cfg *enablementConfig, dir string, regex func(rule) *regexp.Regexp) bool {
	enabled := true
	if cfg == nil {
		return enabled
	}
	d := slashed(dir)
	for _, o := range cfg.Overrides {
		r := parseRule(o)
		if regex(r).MatchString(d) {
			enabled = !r.disable
		}
	}
	return enabled
}

// Enablement returns whether name is enabled for the user (home folder)
// and in the store's workspace. A damaged enablement file reads as
// "everything enabled" together with the error.
func (s *Store) Enablement(name string) (Enablement, error) {
	f, err := s.personsEnablement()
	if err != nil {
		return Enablement{User: true, Workspace: true}, err
	}
	cfg := f[name]
	return Enablement{User: enabledIn(cfg, s.home), Workspace: enabledIn(cfg, s.workspace)}, nil
}

// Enablements reads the enablement file once and returns a lookup for
// many names (what `list` needs). On a damaged file the lookup answers
// "enabled" and the error says why.
func (s *Store) Enablements() (func(name string) Enablement, error) {
	f, err := s.personsEnablement()
	if err != nil {
		return func(string) Enablement { return Enablement{User: true, Workspace: true} }, err
	}
	// Most rules are the same few folders: compile each once.
	compiled := map[rule]*regexp.Regexp{}
	regex := func(r rule) *regexp.Regexp {
		key := rule{base: r.base, subdirs: r.subdirs}
		re, ok := compiled[key]
		if !ok {
			re = key.regex()
			compiled[key] = re
		}
		return re
	}
	return func(name string) Enablement {
		cfg := f[name]
		return Enablement{User: enabledWith(cfg, s.home, regex), Workspace: enabledWith(cfg, s.workspace, regex)}
	}, nil
}

// IsEnabled reports whether name runs in the store's workspace.
func (s *Store) IsEnabled(name string) bool {
	e, _ := s.Enablement(name)
	return e.Workspace
}

// Enable enables an installed extension in scope.
func (s *Store) Enable(name string, scope Scope) error { return s.setEnabled(name, scope, true) }

// Disable disables an installed extension in scope.
func (s *Store) Disable(name string, scope Scope) error { return s.setEnabled(name, scope, false) }

func (s *Store) setEnabled(name string, scope Scope, enable bool) error {
	in, err := s.Get(name)
	if err != nil {
		return err
	}
	if m := in.Manifest(); m != nil {
		name = m.Name
	} else {
		name = in.Name
	}
	var dir string
	switch scope {
	case ScopeUser:
		dir = s.home
	case ScopeWorkspace:
		dir = s.workspace
	default:
		return fmt.Errorf("unknown scope %q: use user or workspace", scope)
	}
	return update(s, s.readEnablement, func(f *enablementFile) error {
		cfg := (*f)[name]
		if cfg == nil {
			cfg = &enablementConfig{}
			(*f)[name] = cfg
		}
		cfg.Overrides = addRule(cfg.Overrides, rule{base: slashed(dir), disable: !enable, subdirs: true}, scope)
		return nil
	}, s.writeEnablement)
}

// addRule puts nr into the rules. Like Gemini CLI it first drops the rules
// for the same folder. A workspace rule then drops the rules for its
// sub-folders and goes last. A user rule keeps the workspace rules under
// the home folder and goes just before the first of them, so that a
// workspace choice keeps overriding the user one.
func addRule(overrides []string, nr rule, scope Scope) []string {
	var kept []string
	for _, o := range overrides {
		r := parseRule(o)
		if r.base == nr.base {
			continue
		}
		if scope == ScopeWorkspace && r.childOf(nr) {
			continue
		}
		kept = append(kept, o)
	}
	at := len(kept)
	if scope == ScopeUser {
		for i, o := range kept {
			if parseRule(o).childOf(nr) {
				at = i
				break
			}
		}
	}
	out := make([]string, 0, len(kept)+1)
	out = append(out, kept[:at]...)
	out = append(out, nr.String())
	return append(out, kept[at:]...)
}

func (s *Store) writeEnablement(f enablementFile) error {
	for name, cfg := range f {
		if cfg == nil || len(cfg.Overrides) == 0 {
			delete(f, name)
		}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(s.enablementPath(), data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", s.enablementPath(), err)
	}
	return nil
}

// forgetEnablement drops every rule of name (on uninstall, as Gemini CLI
// does). The caller holds the lock.
func (s *Store) forgetEnablement(name string) error {
	f, err := s.readEnablement()
	if err != nil {
		return err
	}
	if _, ok := f[name]; !ok {
		return nil
	}
	delete(f, name)
	return s.writeEnablement(f)
}
