package permission

import "testing"

func TestParseHost(t *testing.T) {
	good := []struct{ in, canon string }{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM.", "api.example.com"},
		{"example.com:8443", "example.com:8443"},
		{"*.example.com", "*.example.com"},
		{"https://linter-rules.example.com", "https://linter-rules.example.com"},
		{"HTTPS://Linter-Rules.example.com/", "https://linter-rules.example.com"},
		{"https://example.com:443", "https://example.com"},
		{"http://localhost:8080", "http://localhost:8080"},
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]:9000", "[::1]:9000"},
		{"::1", "[::1]"},
	}
	for _, tc := range good {
		h, err := ParseHost(tc.in)
		if err != nil {
			t.Errorf("ParseHost(%q): %v", tc.in, err)
			continue
		}
		if got := h.String(); got != tc.canon {
			t.Errorf("ParseHost(%q) = %q, want %q", tc.in, got, tc.canon)
		}
	}
	bad := []string{"", " example.com", "exa mple.com", "ftp://example.com", "https://user:pw@example.com",
		"https://example.com/path", "example.com/path", "example.com:0", "example.com:99999", "example.com:http",
		"ex*ample.com", "*.com", "-bad.example.com", "bad..example.com", "ex_ample.com", "*.10.0.0.1", "[::1", "a:b:c"}
	for _, in := range bad {
		if h, err := ParseHost(in); err == nil {
			t.Errorf("ParseHost(%q) = %v, want an error", in, h)
		}
	}
}

func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		rule, host string
		port       int
		want       bool
	}{
		{"example.com", "example.com", 443, true},
		{"example.com", "EXAMPLE.com.", 80, true},
		{"example.com", "api.example.com", 443, false},
		{"*.example.com", "api.example.com", 443, true},
		{"*.example.com", "example.com", 443, false},
		{"https://example.com", "example.com", 443, true},
		{"https://example.com", "example.com", 80, false},
		{"example.com:8443", "example.com", 8443, true},
		{"example.com:8443", "example.com", 443, false},
		{"[::1]:9000", "::1", 9000, true},
	} {
		h, err := ParseHost(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Matches(tc.host, tc.port); got != tc.want {
			t.Errorf("%q.Matches(%q, %d) = %v, want %v", tc.rule, tc.host, tc.port, got, tc.want)
		}
	}
}
