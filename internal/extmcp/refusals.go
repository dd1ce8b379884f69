package extmcp

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/envmap"
	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// Refusal is one thing the sandbox refused an extension's MCP server, in
// the words the person reads: gemkit mcp logs it, keeps the last ones in
// a file of its own (RefusalsPath) for extensions doctor and describe,
// and the call during which it happened ends with a line saying it to
// the model.
type Refusal struct {
	At        time.Time `json:"at"`
	Extension string    `json:"extension"`
	Server    string    `json:"server"`
	// Hook, for a refusal of one of the extension's command hooks (run
	// by gemkit extensions hook), is its label; Server is then empty.
	Hook string `json:"hook,omitempty"`
	// Host is the host (and port, for a connection) the server tried.
	Host string `json:"host,omitempty"`
	// Path is the path of a refused write, as the call named it (see
	// refusedWrites); Host is then empty.
	Path string `json:"path,omitempty"`
	// Lookup is true when the server looked the name up itself, Direct
	// when it connected to the address itself (a client that does not
	// use the sandbox's proxy), rather than asked the proxy.
	Lookup bool `json:"lookup,omitempty"`
	Direct bool `json:"direct,omitempty"`
	// UnixSocket is true for a Unix-domain socket the server tried to
	// create; Host and Path are then empty.
	UnixSocket bool `json:"unixSocket,omitempty"`
	// DataBytes, when set, is the bound of its data folder (Path), which
	// the server reached: gemkit stopped it.
	DataBytes int64  `json:"dataBytes,omitempty"`
	Reason    string `json:"reason"`
	// Allow is the one command that would allow it; empty when no
	// widening would (gemkit's own servers, an allowed host asked for
	// by a client that does not use the proxy).
	Allow string `json:"allow,omitempty"`
	// Count is how many refusals alike it stands for, in one run of the
	// server.
	Count int `json:"count,omitempty"`
	// Listen is true for a TCP port the server tried to listen on; Host
	// is then the address and port.
	Listen bool `json:"listen,omitempty"`
	// Credentials, for a cloud's metadata service the server asked (it
	// looks for credentials), are the kinds of the person's that would
	// answer it instead (permission.MetadataHost); Allow hands the first.
	Credentials []string `json:"credentials,omitempty"`
	// Handed, for such a refusal, says the kind is handed already, and
	// Missing why none of its files reached the server ("" when they
	// did, and it asked all the same).
	Handed  bool   `json:"handed,omitempty"`
	Missing string `json:"missing,omitempty"`
	// Also are the other names of the host Allow allows with it, in one
	// round: the names and addresses one lookup gives (localhost and
	// 127.0.0.1, a name of /etc/hosts and its address, an allowed name
	// and the private address it resolved to).
	Also []string `json:"also,omitempty"`
	// Start is when the run of the server that was refused started: the
	// refusals of one start make one report (Reports).
	Start time.Time `json:"start,omitzero"`
	// Needed says why the server likely needs the host: a call's
	// arguments or its failing answer named it. Background says it is
	// a host servers reach for on their own ("telemetry", "update
	// check"), which they work without.
	Needed     string `json:"needed,omitempty"`
	Background string `json:"background,omitempty"`
	// Answer, for a hook, is the part of its answer that gemkit did not
	// pass on to Gemini CLI (hookout.Filter): a field as the answer names
	// it (hookSpecificOutput.tool_input), or AllOfAnswer for an answer it
	// could not read; Cut says the field, a text, was passed cut. Reason
	// says what Gemini CLI would have done with it. No widening allows it.
	Answer string `json:"answer,omitempty"`
	Cut    bool   `json:"cut,omitempty"`
	// To is the agent gemkit passes a hook's answer to, "" for Gemini
	// CLI (Claude Code for a switched plugin's hook: hookout.FilterClaude).
	To string `json:"to,omitempty"`
}

// AllOfAnswer is Refusal.Answer for a hook's whole answer.
const AllOfAnswer = "*"

// refusal is d, the sandbox's refusal of sp's server, for the person.
func refusal(sp Spec, d netproxy.Denial, data string) Refusal {
	r := Refusal{At: d.At, Extension: sp.Extension, Server: sp.Label(), Host: d.Host, Reason: d.Reason, Count: d.Count}
	if d.Method == sandbox.WriteMethod {
		return writeRefusal(sp, d, r, data)
	}
	switch {
	case d.Method == sandbox.UnixMethod:
		r.UnixSocket = true
		r.Allow = "gemkit extensions sandbox " + Printable(sp.Extension) + " --allow-unix-sockets"
		return r
	case d.Method == sandbox.ListenMethod:
		// No widening: the port would be in the sandbox's own network,
		// which none of the person's programs reach (listenWords).
		r.Listen = true
		r.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		return r
	case d.Method == netproxy.LookupMethod:
		r.Lookup = true
	case d.Port > 0:
		r.Host = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
		r.Direct = d.Method == sandbox.DirectMethod
	}
	cmd := "gemkit extensions sandbox " + Printable(sp.Extension)
	if kinds, ok := permission.MetadataHost(d.Host); ok {
		// Looking for credentials: never a widening to the metadata
		// service, which would hand it the machine's own; the
		// person's by kind instead.
		r.Credentials = slices.Clone(kinds)
		for _, k := range kinds {
			if slices.Contains(sp.Widening.Credentials, k) {
				r.Handed = true
			}
		}
		if len(kinds) > 0 && !r.Handed {
			r.Allow = cmd + " --allow-credentials " + kinds[0]
		}
		return r
	}
	r.Background = background(d.Host)
	// The host is the server's choice: a command is offered only for
	// one that --allow-host takes (letters, digits, hyphens, dots, an
	// address), so that nothing pasted from it runs in a shell.
	if _, err := permission.ParseHost(r.Host); err != nil {
		return r
	}
	switch {
	case d.Reason == netproxy.NotAllowed || d.Reason == netproxy.LookupNotAllowed || d.Reason == sandbox.DirectNotAllowed:
		// The name and the addresses its lookup gives are one host,
		// allowed in one round.
		r.Also = sameHost(d.Host, d.Port)
		r.Allow = cmd + " --allow-host " + hostArg(r.Host)
		for _, a := range r.Also {
			r.Allow += " --allow-host " + hostArg(a)
		}
	case d.Addr != "" && strings.Contains(d.Reason, netproxy.PrivateReason):
		// An allowed name whose lookup gave a private address: listing
		// the address too allows it.
		addr := net.JoinHostPort(d.Addr, strconv.Itoa(d.Port))
		if _, err := permission.ParseHost(addr); err == nil {
			r.Also = []string{addr}
			r.Allow = cmd + " --allow-host " + hostArg(addr)
		}
	}
	return r
}

// readOnlyReason is why a write in another extension's folder was
// refused, before the run names the folder (withRun).
const readOnlyReason = "the folder of another extension, read-only to every sandboxed process whatever is allowed"

// writeRefusal is the refused write d of sp's server, seen by the watch
// of its writes (r is what it has of d so far; data is the server's data
// folder), in the words the server's own error gives (writes.go), and
// with the command that allows it where one does.
func writeRefusal(sp Spec, d netproxy.Denial, r Refusal, data string) Refusal {
	r.Host, r.Path = "", d.Path
	switch d.Reason {
	case sandbox.WriteWorkspace:
		r.Reason = "the workspace is read-only to its servers"
		r.Allow = "gemkit extensions sandbox " + Printable(sp.Extension) + " --allow-write workspace"
	case sandbox.WriteExtension:
		r.Reason = "its extension's folder, read-only to its servers whatever is allowed; a server writes what it keeps in its data folder, its HOME (" + data +
			"), when the manifest's entry points it there (an env value with $HOME)"
	case sandbox.WriteProtected:
		r.Reason = "a protected path of the workspace, read-only whatever is allowed: .git, hooks, .env, editors' and agents' settings and instructions (GEMINI.md, CLAUDE.md, AGENTS.md, .mcp.json)"
	case sandbox.WriteReadOnly:
		r.Reason = readOnlyReason
	default:
		r.Reason = "outside what its servers may write, which is their data folder and the workspace when allowed"
	}
	return r
}

// hostArg is host as one shell word: an IPv6 address's brackets quoted.
func hostArg(host string) string {
	if strings.ContainsAny(host, "[]") {
		return "'" + host + "'"
	}
	return host
}

// target is what the server tried, in words, without how it asked.
func (r Refusal) target() string {
	switch {
	case r.Answer == AllOfAnswer:
		return "passing its answer on to " + cmp.Or(r.To, "Gemini CLI")
	case r.Answer != "" && r.Cut:
		return "passing all of its answer's " + Printable(r.Answer) + " on to " + cmp.Or(r.To, "Gemini CLI")
	case r.Answer != "":
		return "passing its answer's " + Printable(r.Answer) + " on to " + cmp.Or(r.To, "Gemini CLI")
	case r.DataBytes > 0:
		return "more room in its data folder " + Printable(r.Path)
	case r.UnixSocket:
		return "a Unix socket"
	case r.Path != "":
		return "a write to " + Printable(r.Path)
	case r.Listen:
		return "listening on " + Printable(r.Host)
	case r.Credentials != nil || r.isMetadata():
		return "a cloud's metadata service (" + Printable(r.Host) + ")"
	case r.Lookup:
		return "the host " + Printable(r.Host)
	}
	return "a connection to " + Printable(r.Host)
}

// isMetadata reports whether r is a cloud's metadata service asked.
func (r Refusal) isMetadata() bool {
	_, ok := permission.MetadataHost(r.Host)
	return ok && r.Path == "" && !r.UnixSocket && !r.Listen
}

// what is what the server tried, in words, with how it asked for a host
// (for the model, which sees no reason).
func (r Refusal) what() string {
	t := r.target()
	switch {
	case r.UnixSocket || r.Path != "" || r.Listen || r.Answer != "" || r.isMetadata():
		// How it asked changes nothing of what to do.
	case r.Lookup:
		t += " (looked up without the sandbox's proxy)"
	case r.Direct:
		t += " (without the sandbox's proxy)"
	}
	return t
}

// String is the refusal in words for the person: which extension, which
// server, what it tried, why it was refused (which says how it asked)
// and the command that allows it.
func (r Refusal) String() string {
	if r.isMetadata() {
		return fmt.Sprintf("extension %s's MCP server %s is looking for credentials: it asked %s, which gemkit never lets a server reach (on a cloud machine it hands whatever asks the machine's own credentials); %s",
			Printable(r.Extension), Printable(r.Server), r.target(), credentialWords(r))
	}
	if r.Listen {
		who := "MCP server " + Printable(r.Server)
		if r.Hook != "" {
			who = "hook " + Printable(r.Hook)
		}
		return fmt.Sprintf("extension %s's %s was refused %s (%s); %s", Printable(r.Extension), who, r.target(), Printable(r.Reason), listenWords(r))
	}
	what := r.target()
	if r.Needed != "" {
		what += " (" + r.Needed + ")"
	}
	who, kind := "MCP server "+Printable(r.Server), "server"
	if r.Hook != "" {
		who, kind = "hook "+Printable(r.Hook), "hook"
	}
	if why, ok := r.unreached(); ok {
		return fmt.Sprintf("extension %s's %s could not reach %s, which you allowed: %s; %s", Printable(r.Extension), who, Printable(r.Host), Printable(why), unreachedHelp)
	}
	s := fmt.Sprintf("extension %s's %s was refused %s (%s)", Printable(r.Extension), who, what, Printable(r.Reason))
	if r.Background != "" {
		// Not an invitation to widen: it buys nothing.
		return s + "; in the background: " + r.Background + ", which " + kind + "s do on their own and work without, so it needs no widening"
	}
	if r.Allow != "" {
		s += "; to allow it: " + r.Allow
		if r.Lookup || r.Direct {
			s += " (an allowed host is reached through the proxy named in HTTPS_PROXY and HTTP_PROXY, which the " + kind + "'s client must use)"
		}
	}
	if r.Reason == netproxy.LookupNoProxy || r.Reason == sandbox.DirectNoProxy {
		// Allowed, and refused all the same: no widening helps, and the
		// person is to know it is the server's to change.
		s += "; no widening reaches it: the server must use a client that follows HTTPS_PROXY, which is for the extension's author (or a newer Node) to change"
	}
	return s
}

// unreachedHelp is what the person can do of an allowed host the
// network did not reach.
const unreachedHelp = "that is the network's doing, not the sandbox's (no widening changes it): check the host's name, and that this machine reaches it"

// unreached says, of a connection to an allowed host that the network
// did not make (netproxy.Unreachable), why; ok is false for a refusal.
func (r Refusal) unreached() (why string, ok bool) {
	return strings.CutPrefix(r.Reason, netproxy.Unreachable+": ")
}

// forModel is the one line added to a call's result when the server was
// refused during the call: what, each host once, the likely needed
// first and what servers do in the background last and apart, and that
// the person can allow it.
func forModel(rs []Refusal) string {
	rs = merged(ownPorts(rs))
	var what, background, allow []string
	var unreached []string
	for _, r := range rs {
		if why, ok := r.unreached(); ok {
			unreached = append(unreached, Printable(r.Host)+" ("+Printable(why)+")")
			continue
		}
		w := r.what()
		switch {
		case r.isMetadata():
			w += ": it is looking for credentials; " + credentialWords(r)
		case r.Listen:
			w += ": " + listenWords(r)
		case r.Allow == "":
			// The reason says how it asked: said once.
			w = r.target() + ": " + Printable(r.Reason)
		case r.Needed != "":
			w += " (" + r.Needed + ")"
		}
		if r.Background != "" {
			background = append(background, w+" ("+r.Background+")")
			continue
		}
		what = append(what, w)
		if r.Allow == "" || r.isMetadata() {
			continue
		}
		for _, flag := range allowFlags(r) {
			if !slices.Contains(allow, flag) {
				allow = append(allow, flag)
			}
		}
	}
	var s string
	if len(unreached) > 0 {
		s = "This MCP server could not reach, during the call, what the person allowed it: " + strings.Join(unreached, "; ") + ". That is the network, not gemkit's sandbox."
		if len(what) == 0 && len(background) == 0 {
			return s
		}
		s += " "
	}
	if len(what) > 0 {
		s += "gemkit's sandbox refused this MCP server during the call: " + strings.Join(what, "; ") + "."
		if len(background) > 0 {
			s += " And, in the background, which servers do on their own and work without: " + strings.Join(background, "; ") + "."
		}
	} else {
		s += "gemkit's sandbox refused this MCP server during the call, in the background only, which servers do on their own and work without: " + strings.Join(background, "; ") + "."
	}
	if len(allow) > 0 {
		s += " The person (not the model) can allow it with: gemkit extensions sandbox " + Printable(rs[0].Extension) + " " + strings.Join(allow, " ")
		// A host the server reached without the proxy stays refused once
		// allowed unless its client uses the proxy: said here, or the
		// model passes on a command that then fails the same way.
		if slices.ContainsFunc(rs, func(r Refusal) bool {
			return r.Allow != "" && r.Background == "" && !r.isMetadata() && (r.Lookup || r.Direct)
		}) {
			s += " (only the sandbox's proxy, named in HTTPS_PROXY and HTTP_PROXY, leads to an allowed host, and this server's client did not use it: allowing the host helps only if it does)"
		}
	}
	return s
}

// MaxRefusals is how many refusals RefusalsPath keeps: the last ones.
const MaxRefusals = 50

// RefusalsPath is the file of the last refusals, beside the data folders
// (~/.local/share/gemkit/refusals.json): closed to every sandboxed
// process, so that a server cannot write what the person reads there.
func RefusalsPath(env map[string]string) (string, error) {
	root, err := DataRoot(env)
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(root), "refusals.json"), nil
}

// ReadRefusals reads the refusals kept at path, oldest first; a missing
// file is none.
func ReadRefusals(path string) ([]Refusal, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []Refusal
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return slices.DeleteFunc(rs, func(r Refusal) bool { return !r.named() }), nil
}

// named reports whether r names what was tried: a host, a path, a Unix
// socket or a part of a hook's answer. One that names nothing ("a
// connection to :") tells the person nothing to act on: it is neither
// kept nor read.
func (r Refusal) named() bool { return r.Host != "" || r.Path != "" || r.UnixSocket || r.Answer != "" }

// denied reports a refusal of the sandbox (its proxy or its resolver) to
// the person: in gemkit mcp's log, in the end of the server's stderr that
// a failed call quotes, and in the refusals file, with the one command
// that would allow it.
func (s *server) denied(d netproxy.Denial) { s.report(s.refusalOf(d)) }

// dataFolder is the data folder of the extension ext's servers, "" when
// it cannot be told.
func (m *Manager) dataFolder(ext string) string {
	root := m.cfg.DataRoot
	if root == "" {
		var err error
		if root, err = DataRoot(envmap.Of(m.cfg.Environ)); err != nil {
			return ""
		}
	}
	return filepath.Join(root, ext)
}

// refusalOf is refusal of d with what the server's run knows (withRun).
func (s *server) refusalOf(d netproxy.Denial) Refusal {
	r := refusal(s.spec, d, s.m.dataFolder(s.spec.Extension))
	s.withRun(&r)
	return r
}

// withRun adds to r what the server's run knows: when it started, which
// other extension's folder a refused write was in, and why credentials
// it is handed did not reach it.
func (s *server) withRun(r *Refusal) { s.reports.withRun(r, s.spec.Dir) }

// report reports r to the person (see denied): in the log and the
// stderr a failed call quotes once per host of the run (and again when
// a call names a host said to be background), in the refusals file
// each time (counted there with the run's others alike).
func (s *server) report(r Refusal) {
	if s.reports.first(r) {
		words := r.String()
		s.m.log.Warn(words)
		fmt.Fprintf(s.stderr, "gemkit: %s\n", words)
	}
	if err := s.m.keepRefusal(r); err != nil {
		s.m.log.Warn("keeping the refusal for extensions doctor", "err", err)
	}
}

// keepRefusal adds r to the refusals file (0600, written atomically),
// keeping the last MaxRefusals; an unreadable file is started afresh.
// The Manager's lock orders its own writes; two gemkit processes writing
// at once each write a whole file, and the last one wins.
func (m *Manager) keepRefusal(r Refusal) error {
	path := m.cfg.Refusals
	if path == "" {
		var err error
		if path, err = RefusalsPath(envmap.Of(m.cfg.Environ)); err != nil {
			return err
		}
	}
	m.refusalsMu.Lock()
	defer m.refusalsMu.Unlock()
	return KeepRefusals(path, r)
}

// KeepRefusals adds rs to the refusals file at path (RefusalsPath), as
// gemkit mcp does with its servers': a hook's run keeps its own there.
func KeepRefusals(path string, add ...Refusal) error {
	rs, _ := ReadRefusals(path)
	for _, r := range add {
		if !r.named() {
			continue
		}
		// One entry per host of a start: a refusal seen again (or asked
		// otherwise: a lookup, then a connection) updates its entry,
		// moved to the end as the latest. A hook runs at every event,
		// each run a start: its refusal keeps one entry, in its latest
		// run, counting every run's, so that a hook refused at each
		// tool call neither repeats in doctor nor pushes the servers'
		// refusals out of the file.
		if i := slices.IndexFunc(rs, func(o Refusal) bool {
			return !r.Start.IsZero() && o.Extension == r.Extension && o.Server == r.Server && o.Hook == r.Hook &&
				(o.Start.Equal(r.Start) || r.Hook != "") && o.key() == r.key()
		}); i >= 0 {
			o := rs[i]
			rs = slices.Delete(rs, i, i+1)
			m := merged([]Refusal{o, r})[0]
			switch {
			case !o.Start.Equal(r.Start):
				// An earlier run's: the latest run's words, every run
				// counted.
				m = merged([]Refusal{r, o})[0]
				m.Count = max(o.Count, 1) + max(r.Count, 1)
			case r.Count <= o.Count && o.Host == r.Host && o.Reason == r.Reason:
				// The same refusal again (a call marking it needed): its
				// count is the sandbox's, not a sum.
				m.Count = max(o.Count, r.Count)
			}
			r = m
		}
		rs = append(rs, r)
	}
	if len(rs) > MaxRefusals {
		rs = rs[len(rs)-MaxRefusals:]
	}
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// refusedSince returns the refusals of the run whose denials before a
// call were before (Process.Denied then), that is those during the call:
// new ones and ones seen again.
func (s *server) refusedSince(before, after []netproxy.Denial, data string) []Refusal {
	rs := refusedSince(s.spec, before, after, data)
	for i := range rs {
		s.withRun(&rs[i])
	}
	return rs
}

func refusedSince(sp Spec, before, after []netproxy.Denial, data string) []Refusal {
	type key struct {
		method, host, path, reason string
		port                       int
	}
	seen := map[key]int{}
	for _, d := range before {
		seen[key{d.Method, d.Host, d.Path, d.Reason, d.Port}] = d.Count
	}
	var out []Refusal
	for _, d := range after {
		if d.Count > seen[key{d.Method, d.Host, d.Path, d.Reason, d.Port}] {
			out = append(out, refusal(sp, d, data))
		}
	}
	return out
}

// withLine returns the tool result res with line added as a last text
// content; a result not shaped as MCP's is returned as it is.
func withLine(res json.RawMessage, line string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil || m == nil {
		return res
	}
	var content []json.RawMessage
	if c, ok := m["content"]; ok {
		if err := json.Unmarshal(c, &content); err != nil {
			return res
		}
	}
	item, _ := json.Marshal(map[string]string{"type": "text", "text": line})
	c, err := json.Marshal(append(content, item))
	if err != nil {
		return res
	}
	m["content"] = c
	out, err := json.Marshal(m)
	if err != nil {
		return res
	}
	return out
}

// ForgetRefusals takes the refusals of the extension name out of the
// file at path (written atomically; a missing file is left so). A
// gemkit mcp writing the file at the same moment may put them back:
// describe and doctor also leave out what came before the extension's
// last consent or change.
func ForgetRefusals(path, name string) error {
	rs, err := ReadRefusals(path)
	if err != nil || len(rs) == 0 {
		return err
	}
	kept := slices.DeleteFunc(rs, func(r Refusal) bool { return r.Extension == name })
	if len(kept) == len(rs) {
		return nil
	}
	b, err := json.MarshalIndent(kept, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, append(b, '\n'), 0o600)
}
