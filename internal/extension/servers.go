package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gemkit/gemkit/internal/permission"
)

// serversFile holds what the person chose for each extension's MCP
// servers: <home>/.gemini/gemkit/extension-servers.json, mode 0600,
// beside the consent records (consentFile), which it widens.
const serversFile = "extension-servers.json"

// ServerChoice is what the person chose for one extension's stdio MCP
// servers: whether gemkit serves them in its sandbox in Gemini CLI's
// place, and what they may do there beyond the default profile.
type ServerChoice struct {
	// Switched: `gemkit mcp` serves the servers in its sandbox, and
	// Gemini CLI was told not to start them (its mcp.excluded setting).
	Switched bool `json:"switched,omitempty"`
	// Excluded are the server names gemkit added to Gemini CLI's
	// mcp.excluded for this extension, as the records before version 2
	// kept them: read once, into SwitchState.Names, and no longer
	// written.
	Excluded []string `json:"excluded,omitempty"`
	// Names are the names of Gemini CLI's mcp.excluded this extension
	// needs while switched: its servers' and its agents' servers'
	// (SwitchState.Names says who else needs each, and whether it was
	// the person's).
	Names []string `json:"names,omitempty"`
	// Hooks are the extension's command hooks the switch took from
	// Gemini CLI: disabled there (hooksConfig.disabled) and run by a
	// user-level hook of gemkit's in its sandbox.
	Hooks []SwitchedHook `json:"hooks,omitempty"`
	Widening
	// HookWidening is what the person allowed a hook beyond the hook
	// profile, by the hook's label (gemkit extensions sandbox NAME
	// --hook LABEL --allow-...). Like Widening, it is agreed to with the
	// extension's consent.
	HookWidening map[string]Widening `json:"hookWidening,omitempty"`
	// Packages are the packages its package-runner servers (npx, npm
	// exec, ...) run, by server, as gemkit pinned them (pins.go);
	// InstallScripts that the person lets their install scripts run,
	// in the install's sandbox (--allow-install-scripts).
	Packages       map[string]Pin `json:"packages,omitempty"`
	InstallScripts bool           `json:"allowInstallScripts,omitempty"`
	// Handed are the files of the person's credentials its servers are
	// handed, as the switch found them at each kind's own place and the
	// person agreed to them (permission.HandCredentials), with their
	// identity: a server is handed a file only while it is still that
	// one (permission.CheckHanded). A kind of the widening without a
	// file here is handed nothing.
	Handed []permission.HandedFile `json:"handed,omitempty"`
}

// SwitchedHook is one command hook of a switched extension: Gemini CLI
// no longer runs it (Key is in hooksConfig.disabled), and the user-level
// hook of gemkit's that runs it in the sandbox is Command, under Event.
type SwitchedHook struct {
	Label   string `json:"label"`
	Event   string `json:"event"`
	Key     string `json:"key"`
	Command string `json:"command"`
}

// Owned is what gemkit knows of one string it needs in a list of Gemini
// CLI's settings (a name of mcp.excluded, a hook of hooksConfig.disabled).
type Owned struct {
	// Needs are the switched extensions that need it, sorted.
	Needs []string `json:"needs,omitempty"`
	// Yours: the person had written it before any switch needed it, so
	// it stays when none needs it any more. Otherwise gemkit added it,
	// and removes it then.
	Yours bool `json:"yours,omitempty"`
}

// Need records that ext needs the string (Yours when the list held it
// and nobody else needed it).
func (o Owned) Need(ext string, listed bool) Owned {
	if len(o.Needs) == 0 && !o.Yours && listed {
		o.Yours = true
	}
	if !contains(o.Needs, ext) {
		o.Needs = append(o.Needs, ext)
		slices.Sort(o.Needs)
	}
	return o
}

// Release records that ext no longer needs the string; drop reports
// whether gemkit is to take it out of the list: nobody needs it, and
// it was not the person's.
func (o Owned) Release(ext string) (_ Owned, drop bool) {
	o.Needs = slices.DeleteFunc(slices.Clone(o.Needs), func(n string) bool { return n == ext })
	return o, len(o.Needs) == 0 && !o.Yours
}

// Widening is what the person allowed an extension's MCP servers beyond
// the default profile (SandboxedServerWords), by name. It is part of
// the consent hash: a widening is agreed to like a permission.
type Widening struct {
	// Hosts are the hosts the servers may connect to, in canonical form
	// (as permissions.network.allowedHosts), through the sandbox's proxy.
	Hosts []string `json:"allowHosts,omitempty"`
	// Write is AccessWorkspace when the servers may write the workspace
	// (its protected paths excepted, as for tools), else "".
	Write Access `json:"allowWrite,omitempty"`
	// UnixSockets lets the servers create Unix-domain sockets, which
	// reach only what is inside their sandbox (sandbox.Policy's
	// UnixSockets): a browser talks to its own processes over them.
	UnixSockets bool `json:"allowUnixSockets,omitempty"`
	// Credentials are the kinds of the person's credentials handed to
	// the servers, read-only, where their libraries look for them under
	// their HOME (permission.ServerKind): gcloud, aws, kube; the files
	// are ServerChoice.Handed.
	Credentials []string `json:"allowCredentials,omitempty"`
	// Env are the person's variables passed to the servers by name,
	// from the environment of the gemkit mcp that starts them (a $NAME
	// in the manifest's env takes its value too).
	Env []string `json:"allowEnv,omitempty"`
	// DataBytes is how much the servers may keep in the extension's
	// data folder, when the person raised it above DefaultDataBytes; 0
	// is the default.
	DataBytes int64 `json:"dataLimit,omitempty"`
}

// DefaultDataBytes bounds what an extension's servers keep in its data
// folder unless the person raises it (gemkit extensions sandbox NAME
// --data-limit SIZE): a server that reaches it is stopped and reported
// before it fills the disk. 1 GiB holds a browser's profile and cache,
// or a language model's index of a large project.
const DefaultDataBytes int64 = 1 << 30

// DataBound is what the servers may keep in their data folder.
func (w Widening) DataBound() int64 {
	if w.DataBytes > 0 {
		return w.DataBytes
	}
	return DefaultDataBytes
}

// Empty reports whether w widens nothing.
func (w Widening) Empty() bool {
	return len(w.Hosts) == 0 && w.Write == "" && !w.UnixSockets && len(w.Credentials) == 0 && len(w.Env) == 0 && w.DataBytes == 0
}

// Union is w with what o allows added: what an extension's manifest
// declares for its servers (ServerGrant) and what the person allowed.
// Both should be canonical; so is the union.
func (w Widening) Union(o Widening) Widening {
	out := Widening{Write: w.Write, UnixSockets: w.UnixSockets || o.UnixSockets, DataBytes: max(w.DataBytes, o.DataBytes)}
	if o.Write != "" {
		out.Write = o.Write
	}
	merge := func(a, b []string) []string {
		m := slices.Concat(a, b)
		slices.Sort(m)
		return slices.Compact(m)
	}
	out.Hosts, out.Credentials, out.Env = merge(w.Hosts, o.Hosts), merge(w.Credentials, o.Credentials), merge(w.Env, o.Env)
	return out
}

// ReservedEnv are the variables gemkit sets in a server's environment
// itself (its HOME, its PATH, its temporary folder, the sandbox's
// proxy), which --allow-env cannot pass.
var ReservedEnv = []string{"HOME", "PATH", "TMPDIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "NODE_USE_ENV_PROXY", "PYTHONNOUSERSITE"}

var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// CheckEnvName says what is wrong with a variable asked for by name.
func CheckEnvName(name string) error {
	if !envName().MatchString(name) {
		return fmt.Errorf("%q is not a variable's name (letters, digits and _, not starting with a digit)", Printable(name))
	}
	for _, r := range ReservedEnv {
		if strings.EqualFold(r, name) {
			return fmt.Errorf("%s is set by gemkit itself in a server's environment (its HOME is its data folder, its PATH yours without the workspace, its proxy the sandbox's)", name)
		}
	}
	return nil
}

// Canonical is w with its hosts parsed, canonical, sorted and without
// duplicates; a host that does not parse or a write scope other than
// the workspace is an error a person can act on.
func (w Widening) Canonical() (Widening, error) {
	out := Widening{Write: w.Write, UnixSockets: w.UnixSockets, DataBytes: w.DataBytes}
	switch {
	case out.DataBytes < 0:
		return Widening{}, fmt.Errorf("data limit %d: a size is not negative", w.DataBytes)
	case out.DataBytes == DefaultDataBytes:
		out.DataBytes = 0
	case out.DataBytes > 0 && out.DataBytes < DefaultDataBytes:
		return Widening{}, fmt.Errorf("data limit %s is below the default, %s: the bound can be raised, not lowered (a server that needs less keeps less)", Size(w.DataBytes), Size(DefaultDataBytes))
	}
	for _, h := range w.Hosts {
		parsed, err := ParseHost(h)
		if err != nil {
			return Widening{}, fmt.Errorf("host %q %v", h, err)
		}
		if kinds, ok := permission.MetadataHost(parsed.Name); ok {
			return Widening{}, fmt.Errorf("host %q is a cloud's metadata service, which hands whatever asks it this machine's own credentials; gemkit never allows it to a server: %s", h, metadataFix(kinds))
		}
		out.Hosts = append(out.Hosts, parsed.String())
	}
	slices.Sort(out.Hosts)
	out.Hosts = slices.Compact(out.Hosts)
	for _, k := range w.Credentials {
		if err := permission.CheckServerCredential(k); err != nil {
			return Widening{}, fmt.Errorf("credentials %q: %v", Printable(k), err)
		}
		out.Credentials = append(out.Credentials, k)
	}
	slices.Sort(out.Credentials)
	out.Credentials = slices.Compact(out.Credentials)
	for _, v := range w.Env {
		if err := CheckEnvName(v); err != nil {
			return Widening{}, fmt.Errorf("variable: %v", err)
		}
		out.Env = append(out.Env, v)
	}
	slices.Sort(out.Env)
	out.Env = slices.Compact(out.Env)
	switch out.Write {
	case "", AccessNone:
		out.Write = ""
	case AccessWorkspace:
	default:
		return Widening{}, fmt.Errorf("write scope %q: an extension's MCP servers may be allowed to write the workspace (workspace) or nothing but their data folder (none)", w.Write)
	}
	return out, nil
}

// Words say what w adds to the default profile, "" when nothing.
func (w Widening) Words() string {
	var parts []string
	if w.Write == AccessWorkspace {
		parts = append(parts, "create, change and delete files in your workspace (its protected paths excepted)")
	}
	if len(w.Hosts) > 0 {
		parts = append(parts, "connect to "+strings.Join(w.Hosts, ", ")+" (and no other host)")
	}
	if w.DataBytes > 0 {
		parts = append(parts, "keep up to "+Size(w.DataBytes)+" in its data folder (the default is "+Size(DefaultDataBytes)+")")
	}
	if w.UnixSockets {
		parts = append(parts, "create Unix sockets, which reach only those inside its sandbox (its own, and any a program of yours left in your workspace), never your services' (Docker, D-Bus, X11, gemkit's)")
	}
	for _, k := range w.Credentials {
		parts = append(parts, "read your "+k+" credentials: "+permission.ServerCredentialWords(k)+", read-only, where its libraries look for them in its HOME, while the file stays the one you agreed to")
	}
	if len(w.Env) > 0 {
		parts = append(parts, "see your variable"+plural(len(w.Env))+" "+strings.Join(w.Env, ", ")+" (from the environment of the gemkit mcp that starts it)")
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// metadataFix says how a server that asks a cloud's metadata service
// for credentials gets the person's instead, kinds being those that
// would answer it.
func metadataFix(kinds []string) string {
	if len(kinds) == 0 {
		return "the server is looking for a cloud's credentials, of a kind gemkit does not hand (the kinds: " + strings.Join(permission.ServerCredentialKinds(), ", ") + ")"
	}
	var flags []string
	for _, k := range kinds {
		flags = append(flags, "--allow-credentials "+k)
	}
	return "the server is looking for credentials; to hand it yours, by kind: " + strings.Join(flags, ", or ")
}

// hash binds the widening to the permissions hash perm: perm itself
// when w is empty, so that every consent recorded before widenings
// existed still holds.
func (w Widening) hash(perm string) string {
	if w.Empty() {
		return perm
	}
	b, _ := json.Marshal(w)
	sum := sha256.Sum256(append([]byte(perm+"\x00"), b...))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// serverRecords is the file's content; version 2 keeps who needs each
// name of mcp.excluded (Names) instead of the names each extension
// added (ServerChoice.Excluded), which version 1 read back.
type serverRecords struct {
	Version    int                     `json:"version"`
	Extensions map[string]ServerChoice `json:"extensions"`
	// Created are the keys of Gemini CLI's user settings gemkit made to
	// hold what it needs ("mcp", "mcp.excluded", "hooksConfig",
	// "hooksConfig.disabled", "hooks", "hooks.BeforeTool"...), removed
	// again when they hold nothing once no extension is switched.
	Created []string `json:"created,omitempty"`
	// Names are the names of mcp.excluded the switched extensions need,
	// Disabled the strings of hooksConfig.disabled.
	Names    map[string]Owned `json:"excludedNames,omitempty"`
	Disabled map[string]Owned `json:"disabledHooks,omitempty"`
}

// SwitchState is the whole of what the switches keep: every
// extension's choice, the keys of Gemini CLI's settings gemkit made, and
// who needs each string gemkit keeps in its lists.
type SwitchState struct {
	Choices  map[string]ServerChoice
	Created  []string
	Names    map[string]Owned
	Disabled map[string]Owned
}

// recordsVersion is the version of serverRecords this gemkit writes.
const recordsVersion = 2

func (s *Store) serversPath() string { return filepath.Join(s.stateDir(), serversFile) }

// ChoiceFiles are the files that decide whether gemkit mcp serves an
// extension's MCP servers: the consent records and the server choices. A
// running gemkit mcp follows them, so that a switch or a consent given
// while it runs takes effect.
func (s *Store) ChoiceFiles() []string { return []string{s.consentPath(), s.serversPath()} }

// ServerChoicesStamp identifies the MCP server choices file as it is
// (its size and time; "-" when absent), for a reader that keeps the
// choices to know when to read them again.
func (s *Store) ServerChoicesStamp() string {
	fi, err := os.Stat(s.serversPath())
	if err != nil {
		return "-"
	}
	return fmt.Sprint(fi.Size(), " ", fi.ModTime().UnixNano())
}

func (s *Store) readServers() (serverRecords, error) {
	recs := serverRecords{Version: 1}
	err := readRecords(s.serversPath(), "the extensions' MCP server choices",
		"fix or delete it (every extension's MCP servers then go back to Gemini CLI's settings as they are, and to the default profile)", &recs)
	if recs.Extensions == nil {
		recs.Extensions = map[string]ServerChoice{}
	}
	if recs.Names == nil {
		recs.Names = map[string]Owned{}
	}
	if recs.Disabled == nil {
		recs.Disabled = map[string]Owned{}
	}
	// Version 1 kept, per extension, the names it added: each is needed
	// by it and was gemkit's. A name an extension needed that was there
	// before is not among them; the callers add those (SwitchState.Names
	// with Owned.Need) from the extensions' manifests.
	for name, c := range recs.Extensions {
		for _, n := range c.Excluded {
			o := recs.Names[n]
			o.Needs = append(o.Needs, name)
			slices.Sort(o.Needs)
			o.Needs = slices.Compact(o.Needs)
			recs.Names[n] = o
		}
		if c.Excluded != nil {
			c.Excluded = nil
			recs.Extensions[name] = c
		}
	}
	return recs, err
}

func (s *Store) writeServers(recs serverRecords) error {
	recs.Version = recordsVersion
	return writeRecords(s.serversPath(), "record the MCP server choice", recs)
}

// Switches returns everything the switches keep.
func (s *Store) Switches() (SwitchState, error) {
	recs, err := s.readServers()
	return SwitchState{Choices: recs.Extensions, Created: recs.Created, Names: recs.Names, Disabled: recs.Disabled}, err
}

// UpdateSwitches changes what the switches keep under the store's lock:
// change gets it all as it is on disk, and what it leaves is written
// (choices left empty dropped). An error from change writes nothing.
func (s *Store) UpdateSwitches(change func(st *SwitchState) error) error {
	return update(s, s.readServers, func(recs *serverRecords) error {
		st := SwitchState{Choices: recs.Extensions, Created: recs.Created, Names: recs.Names, Disabled: recs.Disabled}
		if err := change(&st); err != nil {
			return err
		}
		for name, c := range st.Choices {
			if c.empty() {
				delete(st.Choices, name)
			}
		}
		for n, o := range st.Names {
			if len(o.Needs) == 0 {
				delete(st.Names, n)
			}
		}
		for n, o := range st.Disabled {
			if len(o.Needs) == 0 {
				delete(st.Disabled, n)
			}
		}
		recs.Extensions, recs.Created, recs.Names, recs.Disabled = st.Choices, st.Created, st.Names, st.Disabled
		return nil
	}, s.writeServers)
}

// empty reports whether c holds nothing worth keeping.
func (c ServerChoice) empty() bool {
	return !c.Switched && len(c.Excluded) == 0 && len(c.Names) == 0 && len(c.Hooks) == 0 && c.Widening.Empty() && len(c.HookWidening) == 0 &&
		len(c.Packages) == 0 && !c.InstallScripts && len(c.Handed) == 0
}

// ServerChoice returns what the person chose for the MCP servers of the
// extension name (the zero choice when nothing).
func (s *Store) ServerChoice(name string) (ServerChoice, error) {
	recs, err := s.readServers()
	return recs.Extensions[name], err
}

// ServerChoices returns every extension's choice, by name.
func (s *Store) ServerChoices() (map[string]ServerChoice, error) {
	recs, err := s.readServers()
	return recs.Extensions, err
}

// CreatedSettings are the keys of Gemini CLI's user settings gemkit made
// (serverRecords.Created).
func (s *Store) CreatedSettings() ([]string, error) {
	recs, err := s.readServers()
	return recs.Created, err
}

// UpdateServerChoice changes the choice of name (and the keys gemkit
// made in Gemini CLI's settings) under the store's lock; a choice left
// empty is dropped.
func (s *Store) UpdateServerChoice(name string, change func(c *ServerChoice, created *[]string)) error {
	return update(s, s.readServers, func(recs *serverRecords) error {
		c := recs.Extensions[name]
		change(&c, &recs.Created)
		if c.empty() {
			delete(recs.Extensions, name)
		} else {
			recs.Extensions[name] = c
		}
		return nil
	}, s.writeServers)
}

// consentHash is the hash consent to the extension name is recorded
// against: its permissions hash perm, widened by what the person
// allowed its MCP servers, with the packages pinned for them. An unreadable choice yields a hash no record
// holds, so that no consent is taken for granted.
func (s *Store) consentHash(name, perm string) string {
	recs, err := s.readServers()
	if err != nil {
		return "unreadable:" + perm
	}
	c := recs.Extensions[name]
	h := c.Widening.hash(perm)
	if len(c.HookWidening) > 0 {
		// The hooks' widenings bind too, after the servers': a consent
		// recorded before them still holds without them.
		b, _ := json.Marshal(c.HookWidening)
		sum := sha256.Sum256(append([]byte(h+"\x00hooks\x00"), b...))
		h = "sha256:" + hex.EncodeToString(sum[:])
	}
	return c.handedHash(c.pinsHash(h))
}

// handedHash binds c's handed files, with their identity, to h: h
// itself when none is, so that every consent recorded before they were
// recorded still holds (and hands nothing).
func (c ServerChoice) handedHash(h string) string {
	if len(c.Handed) == 0 {
		return h
	}
	b, _ := json.Marshal(c.Handed)
	sum := sha256.Sum256(append([]byte(h+"\x00handed\x00"), b...))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HandedOf are the files of c's Handed of the kind.
func (c ServerChoice) HandedOf(kind string) []permission.HandedFile {
	var out []permission.HandedFile
	for _, f := range c.Handed {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// Size is n bytes in words: 1 GiB, 512 MiB, 1.5 GiB.
func Size(n int64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".") + " " + units[u]
}

// ParseSize reads a size a person gives: a number with a unit (KiB, MiB,
// GiB, TiB, or K, M, G, T, KB, MB, GB, TB, all powers of 1024 as disk
// tools print them), or bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a size: write a number and a unit, like 2GiB or 500MiB", s)
	}
	shift := map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20, "G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}
	sh, ok := shift[unit]
	if !ok {
		return 0, fmt.Errorf("%q has the unit %q; use KiB, MiB, GiB or TiB", s, t[i:])
	}
	n := f * float64(int64(1)<<sh)
	if n < 1 || n > 1<<50 {
		return 0, fmt.Errorf("%q is not a size gemkit takes (1 byte to 1 PiB)", s)
	}
	return int64(n), nil
}
