package extension

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// mcp.excluded when it switched the extension; names already there
	// are not among them, so switching back removes exactly these.
	Excluded []string `json:"excluded,omitempty"`
	Widening
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
}

// Empty reports whether w widens nothing.
func (w Widening) Empty() bool { return len(w.Hosts) == 0 && w.Write == "" && !w.UnixSockets }

// Canonical is w with its hosts parsed, canonical, sorted and without
// duplicates; a host that does not parse or a write scope other than
// the workspace is an error a person can act on.
func (w Widening) Canonical() (Widening, error) {
	out := Widening{Write: w.Write, UnixSockets: w.UnixSockets}
	for _, h := range w.Hosts {
		parsed, err := ParseHost(h)
		if err != nil {
			return Widening{}, fmt.Errorf("host %q %v", h, err)
		}
		out.Hosts = append(out.Hosts, parsed.String())
	}
	slices.Sort(out.Hosts)
	out.Hosts = slices.Compact(out.Hosts)
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
	if w.UnixSockets {
		parts = append(parts, "create Unix sockets, which reach only those inside its sandbox (its own, and any a program of yours left in your workspace), never your services' (Docker, D-Bus, X11, gemkit's)")
	}
	return strings.Join(parts, "; ")
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

type serverRecords struct {
	Version    int                     `json:"version"`
	Extensions map[string]ServerChoice `json:"extensions"`
	// Created are the keys of Gemini CLI's user settings gemkit made to
	// hold mcp.excluded ("mcp", "mcp.excluded"), removed again when the
	// last switched extension is switched back and they hold nothing.
	Created []string `json:"created,omitempty"`
}

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
	return recs, err
}

func (s *Store) writeServers(recs serverRecords) error {
	return writeRecords(s.serversPath(), "record the MCP server choice", recs)
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
		if !c.Switched && len(c.Excluded) == 0 && c.Widening.Empty() {
			delete(recs.Extensions, name)
		} else {
			recs.Extensions[name] = c
		}
		return nil
	}, s.writeServers)
}

// consentHash is the hash consent to the extension name is recorded
// against: its permissions hash perm, widened by what the person
// allowed its MCP servers. An unreadable choice yields a hash no record
// holds, so that no consent is taken for granted.
func (s *Store) consentHash(name, perm string) string {
	recs, err := s.readServers()
	if err != nil {
		return "unreadable:" + perm
	}
	return recs.Extensions[name].Widening.hash(perm)
}
