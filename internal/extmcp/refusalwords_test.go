package extmcp

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
	"github.com/gemkit/gemkit/internal/sandbox"
	"github.com/gemkit/gemkit/internal/sandbox/netproxy"
)

// TestMetadataRefusal: a server that asks a cloud's metadata service,
// by any of its names and however it asks, is said to be looking for
// credentials, with the command that hands it the person's by kind; no
// word of it suggests allowing the metadata service. Handed already, the
// words say why they did not answer.
func TestMetadataRefusal(t *testing.T) {
	sp := Spec{Extension: "observability", Server: "obs"}
	for _, c := range []struct {
		d    netproxy.Denial
		want string
	}{
		// google-auth-library 10.9 through gcp-metadata 8.1: a lookup
		// of metadata.google.internal. and a request to 169.254.169.254
		// (HOST_ADDRESS, SECONDARY_HOST_ADDRESS), with or without the
		// proxy.
		{netproxy.Denial{Method: netproxy.LookupMethod, Host: "metadata.google.internal", Reason: netproxy.LookupNotAllowed},
			"to hand it your own credentials instead, by kind: gemkit extensions sandbox observability --allow-credentials gcloud (Google Cloud's"},
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "169.254.169.254", Port: 80, Reason: sandbox.DirectNotAllowed},
			"--allow-credentials gcloud (Google Cloud's, as gcloud auth application-default login writes them), or gemkit extensions sandbox observability --allow-credentials aws (AWS's)"},
		{netproxy.Denial{Method: "GET", Host: "169.254.169.254", Port: 80, Reason: netproxy.NotAllowed}, "--allow-credentials gcloud"},
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "fd00:ec2::254", Port: 80, Reason: sandbox.DirectNotAllowed}, "--allow-credentials aws (AWS's)"},
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "100.100.100.200", Port: 80, Reason: sandbox.DirectNotAllowed}, "gemkit hands no credentials of that cloud"},
	} {
		r := refusal(sp, c.d, "")
		for _, words := range []string{r.String(), forModel([]Refusal{r})} {
			if !strings.Contains(words, "looking for credentials") || !strings.Contains(words, c.want) {
				t.Errorf("%+v:\n%s\nwant %q", c.d, words, c.want)
			}
			if strings.Contains(words, "--allow-host") {
				t.Errorf("%+v: a metadata service is suggested:\n%s", c.d, words)
			}
		}
	}
	// Handed already: found and asked all the same, or not found.
	sp.Widening = extension.Widening{Credentials: []string{"gcloud"}}
	r := refusal(sp, netproxy.Denial{Method: netproxy.LookupMethod, Host: "metadata.google.internal", Reason: netproxy.LookupNotAllowed}, "")
	if r.Allow != "" || !strings.Contains(r.String(), "it is handed your credentials of that kind, and asked all the same") {
		t.Errorf("handed: %+v\n%s", r, r.String())
	}
	why, fix := permission.NotHanded("gcloud", "/h", "gemkit extensions sandbox observability")
	r.Missing = why + ": " + fix
	if w := r.String(); !strings.Contains(w, "none reached it at its start: there is none at /h/.config/gcloud/application_default_credentials.json") ||
		!strings.Contains(w, "`gcloud auth application-default login` writes it; then `gemkit extensions sandbox observability` hands it") {
		t.Errorf("handed, missing:\n%s", w)
	}
	// The lookup of the name and the address are one report of
	// credentials, of the narrower kind.
	rp := Reports([]Refusal{
		refusal(Spec{Extension: "o", Server: "s"}, netproxy.Denial{Method: sandbox.DirectMethod, Host: "169.254.169.254", Port: 80, Reason: sandbox.DirectNotAllowed}, ""),
		refusal(Spec{Extension: "o", Server: "s"}, netproxy.Denial{Method: netproxy.LookupMethod, Host: "metadata.google.internal", Reason: netproxy.LookupNotAllowed}, ""),
	})
	if len(rp) != 1 || len(rp[0].Refusals) != 1 || strings.Join(rp[0].Refusals[0].Credentials, ",") != "gcloud" || rp[0].Allow() != "" {
		t.Errorf("reports %+v", rp)
	}
}

// TestListenRefusal: a refused listen (an OAuth callback on
// 127.0.0.1:5345) is told with why no widening helps and what does;
// a connection of the same run to that port of loopback offers no
// host, which would reach the person's own computer's port.
func TestListenRefusal(t *testing.T) {
	sp := Spec{Extension: "dynatrace", Server: "dt"}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	listen := refusal(sp, netproxy.Denial{Method: sandbox.ListenMethod, Host: "127.0.0.1", Port: 5345, Reason: sandbox.ListenRefused}, "")
	connect := refusal(sp, netproxy.Denial{Method: sandbox.DirectMethod, Host: "127.0.0.1", Port: 5345, Reason: sandbox.DirectNotAllowed}, "")
	sso := refusal(sp, netproxy.Denial{Method: "CONNECT", Host: "sso.dynatrace.com", Port: 443, Reason: netproxy.NotAllowed}, "")
	for _, r := range []*Refusal{&listen, &connect, &sso} {
		r.Start = start
	}
	if w := listen.String(); listen.Allow != "" || !strings.Contains(w, "was refused listening on 127.0.0.1:5345") || !strings.Contains(w, "no widening helps") ||
		!strings.Contains(w, "your browser's sign-in callback") || !strings.Contains(w, "gemkit extensions sandbox dynatrace --off") {
		t.Errorf("listen: %+v\n%s", listen, w)
	}
	for _, rs := range [][]Refusal{{listen, connect, sso}, {connect, listen, sso}} {
		m := forModel(rs)
		if strings.Contains(m, "--allow-host 127.0.0.1") || strings.Contains(m, "--allow-host localhost") || !strings.Contains(m, "--allow-host sso.dynatrace.com:443") {
			t.Errorf("model:\n%s", m)
		}
		rp := Reports(rs)
		if len(rp) != 1 || rp[0].Allow() != "gemkit extensions sandbox dynatrace --allow-host sso.dynatrace.com:443" {
			t.Errorf("report %+v: %q", rp, rp[0].Allow())
		}
	}
}

// TestOneHostOneRound: the names and addresses one lookup gives are one
// refusal, allowed by one command: Node 20's own lookup of localhost
// gives 127.0.0.1:PORT, a client through the proxy asks localhost:PORT;
// a name of /etc/hosts and its address; an allowed name and the private
// address it resolved to.
func TestOneHostOneRound(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("127.0.0.1 localhost\n::1 localhost ip6-localhost\n10.1.2.3 mirror.corp mirror # the company's\n"), 0o644)
	defer func(old string) { hostsFile = old }(hostsFile)
	hostsFile = hosts
	sp := Spec{Extension: "e", Server: "s"}
	for _, c := range []struct {
		d     netproxy.Denial
		allow string
	}{
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "127.0.0.1", Port: 8080, Reason: sandbox.DirectNotAllowed},
			"gemkit extensions sandbox e --allow-host 127.0.0.1:8080 --allow-host localhost:8080"},
		{netproxy.Denial{Method: "CONNECT", Host: "localhost", Port: 8080, Reason: netproxy.NotAllowed},
			"gemkit extensions sandbox e --allow-host localhost:8080 --allow-host 127.0.0.1:8080"},
		{netproxy.Denial{Method: sandbox.DirectMethod, Host: "10.1.2.3", Port: 443, Reason: sandbox.DirectNotAllowed},
			"gemkit extensions sandbox e --allow-host 10.1.2.3:443 --allow-host mirror.corp:443 --allow-host mirror:443"},
		{netproxy.Denial{Method: "CONNECT", Host: "mirror.corp", Port: 443, Reason: netproxy.NotAllowed},
			"gemkit extensions sandbox e --allow-host mirror.corp:443 --allow-host 10.1.2.3:443"},
		{netproxy.Denial{Method: "CONNECT", Host: "registry.corp", Port: 443, Reason: "registry.corp " + netproxy.PrivateReason + " 10.9.9.9 (special-purpose...)", Addr: "10.9.9.9"},
			"gemkit extensions sandbox e --allow-host 10.9.9.9:443"},
	} {
		if r := refusal(sp, c.d, ""); r.Allow != c.allow {
			t.Errorf("%+v: %q, want %q", c.d, r.Allow, c.allow)
		}
	}
	// Both ways of asking for localhost:8080 in one run: one host in
	// the report, one command.
	a := refusal(sp, netproxy.Denial{Method: sandbox.DirectMethod, Host: "127.0.0.1", Port: 8080, Reason: sandbox.DirectNotAllowed}, "")
	b := refusal(sp, netproxy.Denial{Method: "CONNECT", Host: "localhost", Port: 8080, Reason: netproxy.NotAllowed}, "")
	rp := Reports([]Refusal{a, b})
	if len(rp) != 1 || len(rp[0].Refusals) != 1 || rp[0].Allow() != "gemkit extensions sandbox e --allow-host 127.0.0.1:8080 --allow-host localhost:8080" {
		t.Errorf("reports %+v, allow %q", rp, rp[0].Allow())
	}
	// The lookup of a name and a connection to it: one host, the bare
	// name standing for its port.
	l := refusal(sp, netproxy.Denial{Method: netproxy.LookupMethod, Host: "api.example.com", Reason: netproxy.LookupNotAllowed}, "")
	c := refusal(sp, netproxy.Denial{Method: "CONNECT", Host: "api.example.com", Port: 443, Reason: netproxy.NotAllowed}, "")
	if rp := Reports([]Refusal{l, c}); len(rp[0].Refusals) != 1 || rp[0].Allow() != "gemkit extensions sandbox e --allow-host api.example.com" {
		t.Errorf("lookup and connection: %+v, %q", rp[0].Refusals, rp[0].Allow())
	}
}

// TestGroupedReport: one start's refusals are one report, each host
// once: those a call named first, then the rest as they came, the
// background (telemetry, update checks) last, marked and left out of
// the command; two starts are two reports.
func TestGroupedReport(t *testing.T) {
	sp := Spec{Extension: "e", Server: "s"}
	t1, t2 := time.Unix(100, 0).UTC(), time.Unix(200, 0).UTC()
	mk := func(host string, port int, start time.Time, needed string) Refusal {
		r := refusal(sp, netproxy.Denial{Method: "CONNECT", Host: host, Port: port, Reason: netproxy.NotAllowed, Count: 1}, "")
		r.Start, r.Needed = start, needed
		return r
	}
	rs := []Refusal{
		mk("o123.ingest.sentry.io", 443, t1, ""),
		mk("registry.npmjs.org", 443, t1, ""),
		mk("cdn.example.com", 443, t1, ""),
		mk("api.example.com", 443, t1, "named in the call's arguments"),
		mk("cdn.example.com", 443, t1, ""),
		mk("api.example.com", 443, t2, ""),
	}
	rp := Reports(rs)
	if len(rp) != 2 {
		t.Fatalf("%d reports, want 2: %+v", len(rp), rp)
	}
	var order []string
	for _, r := range rp[0].Refusals {
		order = append(order, r.Host+"/"+r.Background)
	}
	if got := strings.Join(order, " "); got != "api.example.com:443/ cdn.example.com:443/ o123.ingest.sentry.io:443/error reports registry.npmjs.org:443/update check" {
		t.Errorf("order %s", got)
	}
	if rp[0].Refusals[1].Count != 2 {
		t.Errorf("cdn counted %d", rp[0].Refusals[1].Count)
	}
	if got := rp[0].Allow(); got != "gemkit extensions sandbox e --allow-host api.example.com:443 --allow-host cdn.example.com:443" {
		t.Errorf("allow %q", got)
	}
	m := forModel(rs[:5])
	if !strings.HasPrefix(m, "gemkit's sandbox refused this MCP server during the call: a connection to api.example.com:443 (named in the call's arguments); a connection to cdn.example.com:443. And, in the background, which servers do on their own and work without: a connection to o123.ingest.sentry.io:443 (error reports); a connection to registry.npmjs.org:443 (update check).") ||
		!strings.HasSuffix(m, "can allow it with: gemkit extensions sandbox e --allow-host api.example.com:443 --allow-host cdn.example.com:443") {
		t.Errorf("model:\n%s", m)
	}
	if w := rs[1].String(); !strings.HasSuffix(w, "registry.npmjs.org:443 (host not in network.allowedHosts); in the background: update check, which servers do on their own and work without, so it needs no widening") {
		t.Errorf("person: %s", w)
	}
}

// TestNeededLogged: gemkit mcp's log says a refused host as the call's
// result does. Refused during a call whose arguments name it, a host
// servers also reach for on their own (an update check) is likely
// needed, with its command; a background refusal said before is said
// again once a call names the host, in its arguments or its failing
// answer; a host no call names stays background.
func TestNeededLogged(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   string   // of the call in flight at the refusal ("": none)
		answer string   // the call's failing answer, after it
		want   []string // in the last line logged of the host
		never  string
	}{
		{"named in the arguments", `{"url":"https://registry.npmjs.org/express"}`, "",
			[]string{"(named in the call's arguments)", "to allow it: gemkit extensions sandbox e --allow-host registry.npmjs.org:443"}, "background"},
		{"named by another call in flight", `{"q":"x"}|{"index":"https://REGISTRY.npmjs.org"}`, "",
			[]string{"(named in the call's arguments)", "to allow it: gemkit extensions sandbox e --allow-host registry.npmjs.org:443"}, "background"},
		{"named in the failing answer", `{"package":"express"}`, "fetch failed: getaddrinfo registry.npmjs.org",
			[]string{"(named in the call's failing answer)", "to allow it: gemkit extensions sandbox e --allow-host registry.npmjs.org:443"}, "background"},
		{"named nowhere", `{"package":"express"}`, "",
			[]string{"in the background: update check"}, "to allow it"},
		{"no call in flight", "", "",
			[]string{"in the background: update check"}, "to allow it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log strings.Builder
			m := NewManager(Config{Refusals: filepath.Join(t.TempDir(), "refusals.json"), Environ: []string{}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			s := &server{m: m, spec: Spec{Extension: "e", Server: "s"}, stderr: &tail{}}
			d := netproxy.Denial{Method: "CONNECT", Host: "registry.npmjs.org", Port: 443, Reason: netproxy.NotAllowed, Count: 1}
			// A background refusal before the call, said as such.
			s.denied(d)
			var ids []uint64
			for a := range strings.SplitSeq(c.args, "|") {
				if a != "" {
					ids = append(ids, s.reports.calling([]byte(a)))
				}
			}
			d.Count++
			s.denied(d)
			rs := refusedSince(s.spec, []netproxy.Denial{{Method: "CONNECT", Host: "registry.npmjs.org", Port: 443, Reason: netproxy.NotAllowed, Count: 1}}, []netproxy.Denial{d}, "")
			for i := range rs {
				s.withRun(&rs[i])
			}
			var res []byte
			if c.answer != "" {
				res, _ = json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": c.answer}}, "isError": true})
			}
			args, _, _ := strings.Cut(c.args, "|")
			s.markNeeded(rs, []byte(args), res, nil)
			for _, id := range ids {
				s.reports.called(id)
			}
			var last string
			for line := range strings.Lines(log.String()) {
				if strings.Contains(line, "registry.npmjs.org") {
					last = line
				}
			}
			if !containsAll(last, c.want) || strings.Contains(last, c.never) {
				t.Errorf("the log says last %q; want %q, never %q\n%s", last, c.want, c.never, log.String())
			}
			if len(s.reports.calls) != 0 {
				t.Errorf("calls left in flight: %v", s.reports.calls)
			}
		})
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestMarkNeeded: a call's refusals that its arguments or its failing
// answer name are marked needed, and the refusals file says so.
func TestMarkNeeded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "refusals.json")
	s := &server{m: NewManager(Config{Refusals: path, Environ: []string{}}), spec: Spec{Extension: "e", Server: "s"}, stderr: &tail{}}
	s.reports.runStart = time.Unix(5, 0).UTC()
	d := func(host string) Refusal {
		return s.refusalOf(netproxy.Denial{Method: "CONNECT", Host: host, Port: 443, Reason: netproxy.NotAllowed, Count: 1})
	}
	rs := []Refusal{d("api.example.com"), d("other.example.com"), d("registry.npmjs.org")}
	for _, r := range rs {
		s.report(r)
	}
	s.markNeeded(rs, []byte(`{"url":"https://API.example.com/v1"}`), []byte(`{"content":[{"type":"text","text":"fetch failed: registry.npmjs.org"}],"isError":true}`), nil)
	if rs[0].Needed != "named in the call's arguments" || rs[1].Needed != "" || rs[2].Needed != "named in the call's failing answer" || rs[2].Background != "" {
		t.Errorf("marked %+v", rs)
	}
	kept, err := ReadRefusals(path)
	if err != nil || len(kept) != 3 {
		t.Fatalf("kept %+v %v", kept, err)
	}
	for _, k := range kept {
		if k.Host == "api.example.com:443" && (k.Needed == "" || k.Count != 1) {
			t.Errorf("kept %+v", k)
		}
	}
}

// TestItemSaysHowOnce: a report's line (doctor, describe) says how the
// server asked for a host once, in the reason, not again beside the
// host; and so does the model's line where it gives the reason.
func TestItemSaysHowOnce(t *testing.T) {
	for _, c := range []struct {
		name   string
		r      Refusal
		item   string
		clause string
	}{
		{"looked up, not allowed",
			Refusal{Host: "api.example.com", Lookup: true, Reason: netproxy.LookupNotAllowed, Needed: "named in the call's arguments", Allow: "gemkit extensions sandbox e --allow-host api.example.com"},
			"the host api.example.com (named in the call's arguments): name looked up without the sandbox's proxy; host not allowed",
			"looked up without the sandbox's proxy"},
		{"looked up, allowed",
			Refusal{Host: "api.example.com", Lookup: true, Reason: netproxy.LookupNoProxy},
			"the host api.example.com: " + netproxy.LookupNoProxy + "; no widening reaches it",
			"looked up without the sandbox's proxy"},
		{"direct, not allowed",
			Refusal{Host: "10.0.0.5:443", Direct: true, Reason: sandbox.DirectNotAllowed, Allow: "gemkit extensions sandbox e --allow-host 10.0.0.5:443"},
			"a connection to 10.0.0.5:443: connection without the sandbox's proxy; host not allowed",
			"without the sandbox's proxy"},
		{"direct, allowed",
			Refusal{Host: "127.0.0.1:8080", Direct: true, Reason: sandbox.DirectNoProxy},
			"a connection to 127.0.0.1:8080: " + sandbox.DirectNoProxy + "; no widening reaches it",
			"without the sandbox's proxy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			item := c.r.Item()
			if !strings.HasPrefix(item, c.item) {
				t.Errorf("Item() = %q, want it to start %q", item, c.item)
			}
			if n := strings.Count(item, c.clause); n != 1 {
				t.Errorf("Item() says %q %d times: %q", c.clause, n, item)
			}
			if c.r.Allow == "" {
				if m := forModel([]Refusal{c.r}); strings.Count(m, c.clause) != 1 {
					t.Errorf("the model's line says %q %d times: %q", c.clause, strings.Count(m, c.clause), m)
				}
			}
		})
	}
}
