package mcpserver

import (
	"fmt"
	"strings"
	"testing"
)

// TestParkedClaim tries a parked call's requestState as a client other
// than the one it was given to would: unknown, from another session, for
// another tool or other arguments (in another order they are the same),
// and a second time. Only the retry of the same call on the same session
// takes it, once.
func TestParkedClaim(t *testing.T) {
	mine, theirs := new(int), new(int)
	var p parkedCalls
	c := &extCall{state: "gemkit-0123", principal: mine, tool: "asker_ask", args: digest([]byte(`{"a":1,"b":2}`))}
	if !p.park(c) {
		t.Fatal("not parked")
	}
	for _, tc := range []struct {
		name, state string
		principal   any
		tool, args  string
		why         string
	}{
		{"unknown", "gemkit-9999", mine, "asker_ask", `{"a":1,"b":2}`, "gemkit holds no question of that requestState"},
		{"another session", "gemkit-0123", theirs, "asker_ask", `{"a":1,"b":2}`, "given to another session"},
		{"no session", "gemkit-0123", nil, "asker_ask", `{"a":1,"b":2}`, "given to another session"},
		{"another tool", "gemkit-0123", mine, "asker_other", `{"a":1,"b":2}`, "given for another call"},
		{"other arguments", "gemkit-0123", mine, "asker_ask", `{"a":1,"b":3}`, "given for another call"},
		{"taken", "gemkit-0123", mine, "asker_ask", `{"b":2, "a":1}`, ""},
		{"taken twice", "gemkit-0123", mine, "asker_ask", `{"a":1,"b":2}`, "gemkit holds no question of that requestState"},
	} {
		got, why := p.claim(tc.state, tc.principal, tc.tool, digest([]byte(tc.args)))
		if tc.why == "" && (got != c || why != "") || tc.why != "" && (got != nil || !strings.Contains(why, tc.why)) {
			t.Errorf("%s: claimed %v, %q", tc.name, got, why)
		}
	}
}

// TestParkedBound: no more than maxParked calls wait for a retry.
func TestParkedBound(t *testing.T) {
	var p parkedCalls
	for i := range maxParked {
		if !p.park(&extCall{state: fmt.Sprint(i)}) {
			t.Fatalf("call %d not parked", i)
		}
	}
	if p.park(&extCall{state: "one more"}) {
		t.Error("parked over the bound")
	}
}
