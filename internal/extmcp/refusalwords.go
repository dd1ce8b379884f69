package extmcp

import (
	"bufio"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// credentialWords say how a server that asked a cloud's metadata
// service gets the person's credentials instead: the command that hands
// them, by kind; or, when they are handed already, why they did not
// answer it. Whose they are comes from the kind's row
// (permission.CredentialCloud), as every word of a kind.
func credentialWords(r Refusal) string {
	cmd := "gemkit extensions sandbox " + Printable(r.Extension)
	switch {
	case r.Handed && r.Missing != "":
		return "your credentials of that kind are handed to it, but none reached it at its start: " + Printable(r.Missing)
	case r.Handed:
		return "it is handed your credentials of that kind, and asked all the same (for what they do not hold: a project, a region); no widening reaches a metadata service, and a project is given to it by a setting or a variable (--allow-env)"
	case len(r.Credentials) == 0:
		return "gemkit hands no credentials of that cloud (the kinds it hands: " + strings.Join(permission.ServerCredentialKinds(), ", ") + "); a token the server takes from a variable is passed with " + cmd + " --allow-env NAME"
	}
	var alts []string
	for _, k := range r.Credentials {
		alts = append(alts, cmd+" --allow-credentials "+k+" ("+permission.CredentialCloud(k)+")")
	}
	return "to hand it your own credentials instead, by kind: " + strings.Join(alts, ", or ")
}

// listenWords say why no widening helps a server refused a listen, and
// what does.
func listenWords(r Refusal) string {
	widen := "gemkit extensions sandbox " + Printable(r.Extension)
	if r.Hook != "" {
		widen += " --hook " + Printable(r.Hook)
	}
	return "no widening helps: the sandbox's network is its own, so a port listened on there would be reached by none of your programs, your browser's sign-in callback (an OAuth redirect to 127.0.0.1) included; what signs in so needs a token it takes from a setting or a variable (" +
		widen + " --allow-env NAME), or to run outside gemkit's sandbox (gemkit extensions sandbox " + Printable(r.Extension) + " --off gives it back to Gemini CLI, unconfined)"
}

// backgroundHosts are hosts servers reach for on their own, for which a
// call never waits: their error reporting and usage telemetry, and the
// version checks of their package managers and tools. A refusal of one
// is marked as such, last, and left out of the command that allows the
// rest.
var backgroundHosts = []struct{ suffix, what string }{
	{"sentry.io", "error reports"}, {"ingest.sentry.io", "error reports"}, {"bugsnag.com", "error reports"},
	{"rollbar.com", "error reports"}, {"segment.io", "telemetry"}, {"segment.com", "telemetry"},
	{"mixpanel.com", "telemetry"}, {"amplitude.com", "telemetry"}, {"posthog.com", "telemetry"},
	{"statsig.com", "telemetry"}, {"statsigapi.net", "telemetry"}, {"google-analytics.com", "telemetry"},
	{"datadoghq.com", "telemetry"}, {"browser-intake-datadoghq.com", "telemetry"}, {"nr-data.net", "telemetry"},
	{"honeycomb.io", "telemetry"}, {"applicationinsights.azure.com", "telemetry"}, {"dc.services.visualstudio.com", "telemetry"},
	{"registry.npmjs.org", "update check"}, {"registry.yarnpkg.com", "update check"}, {"pypi.org", "update check"},
	{"checkpoint-api.hashicorp.com", "update check"},
}

// background says what a host is when servers reach for it on their own
// ("telemetry", "update check"), "" otherwise.
func background(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if hp, _, err := net.SplitHostPort(h); err == nil {
		h = hp
	}
	for _, b := range backgroundHosts {
		if h == b.suffix || strings.HasSuffix(h, "."+b.suffix) {
			return b.what
		}
	}
	for _, w := range []string{"telemetry", "analytics"} {
		if strings.HasPrefix(h, w+".") || strings.Contains(h, "."+w+".") {
			return "telemetry"
		}
	}
	return ""
}

// hostsFile is the file whose names a server's own lookup finds without
// asking the sandbox's resolver (the sandbox shows the system's).
var hostsFile = "/etc/hosts"

// sameHost are the other names of host (and port) that one lookup
// gives, each a host --allow-host takes: localhost and 127.0.0.1 (the
// proxy reaches loopback by either), and a name of /etc/hosts and its
// addresses. A client that looked the name up itself tried the address;
// one that asks the proxy names the name: allowing both at once allows
// the host in one round. IPv6 loopback is left out, which the proxy
// never reaches.
func sameHost(host string, port int) []string {
	h := strings.ToLower(strings.Trim(host, "[]"))
	var names []string
	switch h {
	case "localhost":
		names = []string{"127.0.0.1"}
	case "127.0.0.1":
		names = []string{"localhost"}
	default:
		names = etcHosts(h)
	}
	var out []string
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil && ip.IsLoopback() && ip.To4() == nil {
			continue
		}
		if port > 0 {
			n = net.JoinHostPort(n, strconv.Itoa(port))
		}
		if _, err := permission.ParseHost(n); err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// etcHosts are the names /etc/hosts gives the address h, or the
// addresses it gives the name h (but loopback's, which localhost says).
func etcHosts(h string) []string {
	f, err := os.Open(hostsFile)
	if err != nil {
		return nil
	}
	defer f.Close()
	isAddr := net.ParseIP(h) != nil
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(strings.ToLower(line))
		if len(fields) < 2 {
			continue
		}
		addr := net.ParseIP(fields[0])
		if addr == nil || addr.IsLoopback() {
			continue
		}
		switch {
		case isAddr && addr.Equal(net.ParseIP(h)):
			out = append(out, fields[1:]...)
		case !isAddr && slices.Contains(fields[1:], h):
			out = append(out, addr.String())
		}
	}
	return out
}

// allowFlags are the flags of r's command, each with its value
// ("--allow-host api.example.com").
func allowFlags(r Refusal) []string {
	rest, ok := strings.CutPrefix(r.Allow, "gemkit extensions sandbox "+Printable(r.Extension)+" ")
	if !ok {
		return nil
	}
	var out []string
	for _, f := range strings.Split(" "+rest, " --")[1:] {
		out = append(out, "--"+f)
	}
	return out
}

// hostName is the name (or address) of a host[:port], lower case.
func hostName(h string) string {
	if hp, _, err := net.SplitHostPort(h); err == nil {
		h = hp
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// key is what makes two refusals one in a report: the same host (by any
// of its names, whatever the port or how it was asked), the same path,
// Unix sockets, a listen on the same port, a metadata service, or the
// same part of a hook's answer.
func (r Refusal) key() string {
	switch {
	case r.Answer != "":
		return "answer " + r.Answer
	case r.UnixSocket:
		return "unix"
	case r.Path != "":
		return "path " + r.Path
	case r.Listen:
		return "listen " + r.Host
	case r.isMetadata():
		return "metadata"
	}
	names := []string{hostName(r.Host)}
	for _, a := range r.Also {
		names = append(names, hostName(a))
	}
	return "host " + slices.Min(names)
}

// merged is rs with each host once (key), in the order a person should
// read them: those a call named first, then the others as they came,
// what servers do in the background last. A merged refusal counts all
// of its own, is needed when one was, is background only when all were,
// and its command allows all they tried (a bare name standing for its
// ports).
func merged(rs []Refusal) []Refusal {
	var out []Refusal
	index := map[string]int{}
	for _, r := range rs {
		k := r.key()
		i, ok := index[k]
		if !ok {
			index[k] = len(out)
			out = append(out, r)
			continue
		}
		m := &out[i]
		m.Count += r.Count
		if r.At.After(m.At) {
			m.At = r.At
		}
		if m.Needed == "" {
			m.Needed = r.Needed
		}
		if r.Background == "" {
			m.Background = ""
		}
		if len(r.Credentials) > 0 && (len(m.Credentials) == 0 || len(r.Credentials) < len(m.Credentials)) {
			// The narrower guess of the kind: metadata.google.internal
			// says Google Cloud where 169.254.169.254 may be any cloud.
			m.Credentials, m.Allow, m.Handed, m.Missing, m.Host = r.Credentials, r.Allow, r.Handed, r.Missing, r.Host
		}
		if r.Allow != "" && !r.isMetadata() {
			m.Allow = unionAllow(*m, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Refusal) int { return rank(a) - rank(b) })
	return out
}

// rank orders a report: needed, the rest, background.
func rank(r Refusal) int {
	switch {
	case r.Needed != "":
		return 0
	case r.Background != "":
		return 2
	}
	return 1
}

// unionAllow is one command with the flags of a's and b's, a bare host
// standing for the same host with a port.
func unionAllow(a, b Refusal) string {
	flags := allowFlags(a)
	for _, f := range allowFlags(b) {
		if !slices.Contains(flags, f) {
			flags = append(flags, f)
		}
	}
	bare := map[string]bool{}
	for _, f := range flags {
		if h, ok := strings.CutPrefix(f, "--allow-host "); ok && hostName(h) == strings.ToLower(h) {
			bare[hostName(h)] = true
		}
	}
	var kept []string
	for _, f := range flags {
		if h, ok := strings.CutPrefix(f, "--allow-host "); ok && hostName(h) != strings.ToLower(h) && bare[hostName(h)] {
			continue
		}
		kept = append(kept, f)
	}
	if len(kept) == 0 {
		return a.Allow
	}
	return "gemkit extensions sandbox " + Printable(a.Extension) + " " + strings.Join(kept, " ")
}

// A Report is what the sandbox refused one start of one server: each
// host once, the likely needed first, the background last (merged).
type Report struct {
	Extension, Server string
	// Hook is the label of the hook refused (gemkit extensions hook),
	// "" for a server.
	Hook string
	// Start is when the server started (zero for refusals kept before
	// reports were grouped); At when it was last refused.
	Start, At time.Time
	Refusals  []Refusal
}

// Reports groups rs (oldest first) by extension, server and start,
// oldest report first.
func Reports(rs []Refusal) []Report {
	type key struct {
		ext, server, hook string
		start             time.Time
	}
	var order []key
	by := map[key][]Refusal{}
	for _, r := range rs {
		k := key{r.Extension, r.Server, r.Hook, r.Start}
		if r.Start.IsZero() {
			// Kept before starts were recorded: a report of its own.
			k.start = r.At
		}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	var out []Report
	for _, k := range order {
		m := merged(ownPorts(by[k]))
		rp := Report{Extension: k.ext, Server: k.server, Hook: k.hook, Start: k.start, Refusals: m}
		for _, r := range m {
			if r.At.After(rp.At) {
				rp.At = r.At
			}
		}
		out = append(out, rp)
	}
	return out
}

// ownPorts takes the command away from a connection to a loopback port
// the same run was refused listening on: through the proxy it would
// reach the person's own computer's port, not the server's.
func ownPorts(rs []Refusal) []Refusal {
	ports := map[string]bool{}
	for _, r := range rs {
		if r.Listen {
			_, p, _ := net.SplitHostPort(r.Host)
			ports[p] = true
		}
	}
	if len(ports) == 0 {
		return rs
	}
	out := slices.Clone(rs)
	for i, r := range out {
		if r.Listen || r.Path != "" || r.UnixSocket || r.Answer != "" {
			continue
		}
		h, p, err := net.SplitHostPort(r.Host)
		if err != nil || !ports[p] || !loopbackName(h) {
			continue
		}
		out[i].Allow = ""
		out[i].Also = nil
		out[i].Reason = "its own port " + p + ", which it was refused listening on: allowed, it would reach that port of your computer, not its own"
	}
	return out
}

func loopbackName(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// Allow is one command that allows what the report's server likely
// needs: every refusal's command but the background's and the
// metadata service's (whose words hand credentials instead), "" when
// none.
func (rp Report) Allow() string {
	var flags []string
	for _, r := range rp.Refusals {
		if r.Background != "" || r.isMetadata() {
			continue
		}
		for _, f := range allowFlags(r) {
			if !slices.Contains(flags, f) {
				flags = append(flags, f)
			}
		}
	}
	if len(flags) == 0 {
		return ""
	}
	return "gemkit extensions sandbox " + Printable(rp.Extension) + " " + strings.Join(flags, " ")
}

// Why a refusal is likely needed (Refusal.Needed).
const (
	namedInArgs   = "named in the call's arguments"
	namedInAnswer = "named in the call's failing answer"
)

// markNeeded marks the refusals of a call that its arguments or its
// failing answer (res, an error result, or err) named by host: the
// server likely needs those, and a report says them first. The log is
// told again of a host it said to be background, and the refusals file
// is told too.
func (s *server) markNeeded(rs []Refusal, args, res []byte, err error) {
	argText := strings.ToLower(string(args))
	var answer string
	switch {
	case err != nil:
		answer = strings.ToLower(err.Error())
	case strings.Contains(string(res), `"isError":true`):
		answer = strings.ToLower(string(res))
	}
	for i := range rs {
		r := &rs[i]
		switch {
		case r.namedIn(argText):
			r.Needed = namedInArgs
		case r.namedIn(answer):
			r.Needed = namedInAnswer
		default:
			continue
		}
		r.Background = ""
		s.report(*r)
	}
}

// namedIn reports whether text (in lower case) names the host r tried,
// by any of its names: one a call names is likely needed.
func (r Refusal) namedIn(text string) bool {
	if text == "" || r.Path != "" || r.UnixSocket || r.Listen || r.Answer != "" || r.isMetadata() {
		return false
	}
	names := []string{hostName(r.Host)}
	for _, a := range r.Also {
		names = append(names, hostName(a))
	}
	return slices.ContainsFunc(names, func(n string) bool { return n != "" && strings.Contains(text, n) })
}

// AllowedBy reports whether the widening w (a manifest's grant with the
// person's on top) gives what r's command asks: the host r tried (by an
// entry that matches it), the workspace for a write, Unix sockets, or
// credentials of a kind that would answer a metadata service. A part of
// a hook's answer is allowed by none.
func (r Refusal) AllowedBy(w extension.Widening) bool {
	switch {
	case r.Answer != "":
		return false
	case r.DataBytes > 0:
		return w.DataBound() > r.DataBytes
	case r.UnixSocket:
		return w.UnixSockets
	case r.Path != "":
		return w.Write == extension.AccessWorkspace
	case r.isMetadata():
		return !r.Handed && slices.ContainsFunc(r.Credentials, func(k string) bool { return slices.Contains(w.Credentials, k) })
	case r.Allow == "":
		return false
	}
	name, port := hostName(r.Host), 0
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port, _ = strconv.Atoi(p)
	}
	for _, h := range w.Hosts {
		e, err := permission.ParseHost(h)
		if err != nil {
			continue
		}
		if port > 0 && e.Matches(name, port) || port == 0 && e.Port == 0 && e.Scheme == "" && e.Matches(name, 1) {
			return true
		}
	}
	return false
}

// Item is r in a report's words: what the server tried and why it was
// refused, with what helps when no widening does, without its command
// (the report's is one for all).
func (r Refusal) Item() string {
	switch {
	case r.isMetadata():
		return r.target() + ": it is looking for credentials, and gemkit never lets a server reach a metadata service (on a cloud machine it hands whatever asks the machine's own); " + credentialWords(r)
	case r.Listen:
		return r.target() + ": " + listenWords(r)
	}
	if why, ok := r.unreached(); ok {
		return Printable(r.Host) + ": not reached, though allowed: " + Printable(why) + "; " + unreachedHelp
	}
	// The reason says how the server asked (looked up without the
	// proxy, connected without it): target, not what, says it once.
	s := r.target()
	if r.Needed != "" {
		s += " (" + r.Needed + ")"
	}
	s += ": " + Printable(r.Reason)
	switch {
	case r.Background != "":
		s += "; in the background (" + r.Background + "), which servers do on their own and work without: no widening needed"
	case r.Reason == netproxy.LookupNoProxy || r.Reason == sandbox.DirectNoProxy:
		s += "; no widening reaches it: the server must use a client that follows HTTPS_PROXY, which is for the extension's author (or a newer Node) to change"
	}
	if r.Count > 1 {
		s += " (" + strconv.Itoa(r.Count) + " times)"
	}
	return s
}

// Lines are the report in words for the person: a line saying which
// server was refused, at which start, then one per host (Item).
func (rp Report) Lines() []string {
	when := rp.At.Local().Format("2006-01-02 15:04:05")
	head := "extension " + Printable(rp.Extension) + "'s MCP server " + Printable(rp.Server) + " was refused"
	if rp.Hook != "" {
		head = "extension " + Printable(rp.Extension) + "'s hook " + Printable(rp.Hook) + " was refused"
	}
	if !rp.Start.IsZero() && !rp.Start.Equal(rp.At) {
		head += " in its run started " + rp.Start.Local().Format("2006-01-02 15:04:05") + " (last at " + when + ")"
	} else {
		head += " (at " + when + ")"
	}
	out := []string{head + ":"}
	for _, r := range rp.Refusals {
		out = append(out, r.Item())
	}
	return out
}

// Without is the report without the refusals drop says are answered.
func (rp Report) Without(drop func(Refusal) bool) Report {
	out := rp
	out.Refusals = slices.DeleteFunc(slices.Clone(rp.Refusals), drop)
	return out
}
