package extmcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/permission"
)

// witness is a loopback service that records every request it gets: a
// local service a redirect or an endpoint event would lead gemkit to.
type witness struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func newWitness(t *testing.T) *witness {
	w := &witness{}
	ts := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.seen = append(w.seen, fmt.Sprintf("%s %s key=%q body=%dB", r.Method, r.URL.Path, r.Header.Get("X-Api-Key"), len(body)))
		w.mu.Unlock()
		rw.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(ts.Close)
	w.url = ts.URL
	return w
}

func (w *witness) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen...)
}

// TestRemoteStaysWhereConsentSaid is the sixth round's fourth finding:
// the URL consent named answered 307 to http://127.0.0.1:PORT/... and
// gemkit's unsandboxed process followed it with the entry's headers and
// body. Now no request leaves the origin of the URL: the redirect is
// refused in words naming both origins, and the local service gets
// nothing. Its class, each with a local service that must get nothing:
// an SSE server whose endpoint event names another origin, a URL at a
// loopback address not allowed by name (as an IP, and as a name that
// resolves there), one allowed only by a bare name or a wildcard (not
// that very host and port), and one allowed by another name than the
// URL's; the controls: a redirect within the origin is followed, and the
// URL allowed by its own host and port is reached.
func TestRemoteStaysWhereConsentSaid(t *testing.T) {
	rs := newRemoteServer(t)
	local := newWitness(t)
	host := strings.TrimPrefix(rs.url, "http://")
	_, port, _ := strings.Cut(host, ":")
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			// The finding: a 307 keeps the method, the body and the headers.
			http.Redirect(w, r, local.url+"/admin", http.StatusTemporaryRedirect)
		case "/sse":
			// An SSE endpoint event naming another origin.
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: %s/message?sessionid=1\n\n", local.url)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	// A server that moved its endpoint within its origin.
	moved := http.NewServeMux()
	moved.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return rs.srv }, nil))
	moved.Handle("/old", http.RedirectHandler("/mcp", http.StatusTemporaryRedirect))
	movedTS := httptest.NewServer(moved)
	t.Cleanup(movedTS.Close)
	movedHost := strings.TrimPrefix(movedTS.URL, "http://")
	t.Cleanup(front.Close)
	frontHost := strings.TrimPrefix(front.URL, "http://")
	headers := map[string]string{"X-Api-Key": "k-7731"}
	for _, tc := range []struct {
		name, url, transport string
		hosts                []string
		want                 string // "" : connects
	}{
		{"a redirect to another origin", front.URL + "/away", TransportHTTP, []string{frontHost},
			"answered with a redirect to " + local.url + "/admin, another origin than http://" + frontHost + ", which your consent to the extension named; gemkit does not follow it"},
		{"an SSE endpoint at another origin", front.URL + "/sse", TransportSSE, []string{frontHost},
			"it asked gemkit to send to " + local.url + "/message?sessionid=1, another origin than http://" + frontHost},
		{"loopback not allowed", rs.url + "/mcp", TransportHTTP, nil,
			host + " is this computer's own address, which gemkit reaches for an extension only when you allow that very host and port: gemkit extensions sandbox far --allow-host " + host},
		{"a name that resolves to loopback", "http://localhost:" + port + "/mcp", TransportHTTP, []string{host},
			"localhost:" + port + " is this computer's own address (the name resolves to 127.0.0.1)"},
		{"a bare name, any port", rs.url + "/mcp", TransportHTTP, []string{"127.0.0.1"}, "is this computer's own address"},
		{"a wildcard", "http://localhost:" + port + "/mcp", TransportHTTP, []string{"*.localhost"}, "is this computer's own address"},
		{"a redirect within the origin", movedTS.URL + "/old", TransportHTTP, []string{movedHost}, ""},
		{"allowed by its host and port", rs.url + "/mcp", TransportHTTP, []string{host}, ""},
		{"allowed by name", "http://localhost:" + port + "/mcp", TransportHTTP, []string{"localhost:" + port}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(Config{Timeout: 5 * time.Second, Environ: []string{"HOME=/nonexistent"}})
			t.Cleanup(m.Close)
			m.Sync([]Spec{{Extension: "far", Server: "srv", URL: tc.url, Transport: tc.transport, Headers: headers,
				Widening: extension.Widening{Hosts: tc.hosts}}})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, failed := m.Catalog(ctx)
			switch {
			case tc.want == "" && len(failed) > 0:
				t.Errorf("not connected: %v", failed[0].Err)
			case tc.want != "" && (len(failed) != 1 || !strings.Contains(failed[0].Err.Error(), tc.want)):
				t.Errorf("failed %v, want %q", failed, tc.want)
			}
			if len(failed) == 1 {
				t.Log(failed[0].Err)
			}
			if got := local.requests(); len(got) > 0 {
				t.Errorf("the local service was reached: %v", got)
			}
		})
	}
}

// TestReachRule: the rule for one address, as the sandbox's proxy has it:
// a public address is reached; an address of this computer or a private
// network by an address or localhost named exactly with its port; by
// another name only when the address is listed too (DNS rebinding).
func TestReachRule(t *testing.T) {
	loop, private, public := net.ParseIP("127.0.0.1"), net.ParseIP("10.1.2.3"), net.ParseIP("93.184.216.34")
	for _, c := range []struct {
		hosts   []string
		ip      net.IP
		host    string
		reached bool
	}{
		{nil, public, "mcp.example.com", true},
		{nil, private, "mcp.corp", false},
		{[]string{"mcp.corp:443"}, private, "mcp.corp", false},
		{[]string{"mcp.corp:443", "10.1.2.3"}, private, "mcp.corp", true},
		{[]string{"mcp.corp:443", "10.1.2.3:80"}, private, "mcp.corp", false},
		{[]string{"10.1.2.3:443"}, private, "10.1.2.3", true},
		{[]string{"10.1.2.3"}, private, "10.1.2.3", false},
		{[]string{"localhost:443"}, loop, "localhost", true},
		{[]string{"rebound.example.com:443"}, loop, "rebound.example.com", false},
	} {
		s := &server{spec: Spec{Extension: "far", Widening: extension.Widening{Hosts: c.hosts}}}
		err := s.reach(c.ip, c.host, 443, s.allowedByName(c.host, 443), permission.ClosedInputs{Home: "/nonexistent"})
		if (err == nil) != c.reached {
			t.Errorf("%s (%s) with %v: %v, want reached %v", c.host, c.ip, c.hosts, err, c.reached)
		}
	}
}
