package pkgrun

import (
	"slices"
	"testing"
)

// TestEngineOf: the latest is said only where npm's pick for the line
// could have been it (a range it is in), and what the registry chose
// is kept only in a version's form, bounded.
func TestEngineOf(t *testing.T) {
	latest := &viewed{Version: "3.26.0", Deprecated: []byte(`"use v4"`)}
	for _, tc := range []struct {
		name   string
		a      engineAnswer
		latest *viewed
		want   Engine
	}{
		{"bare, latest needs more", engineAnswer{Node: "20.20.2", Type: "range", InRange: true, Latest: []string{"node >=22"}}, &viewed{Version: "3.26.0"},
			Engine{Node: "20.20.2", Latest: "3.26.0", LatestNeeds: []string{"node >=22"}}},
		{"deprecated", engineAnswer{Node: "20.20.2", Type: "range", InRange: true}, latest, Engine{Node: "20.20.2", Latest: "3.26.0", LatestDeprecated: true}},
		{"outside the range", engineAnswer{Node: "20.20.2", Type: "range", Latest: []string{"node >=22"}}, latest, Engine{Node: "20.20.2"}},
		{"a tag", engineAnswer{Node: "20.20.2", Type: "tag", InRange: true, Latest: []string{"node >=22"}}, latest, Engine{Node: "20.20.2"}},
		{"the latest pinned", engineAnswer{Node: "20.20.2", Type: "range", InRange: true}, &viewed{Version: "3.22.2"}, Engine{Node: "20.20.2"}},
	} {
		got := engineOf("3.22.2", tc.latest, tc.a)
		if got.Node != tc.want.Node || got.Latest != tc.want.Latest || !slices.Equal(got.LatestNeeds, tc.want.LatestNeeds) || got.LatestDeprecated != tc.want.LatestDeprecated {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, out := range []string{`{"version": "1.0.0\u001b[2J"}`, `{"version": "latest"}`, `"1.0.0"`, `not json`} {
		if v := parseViewed([]byte(out)); v != nil {
			t.Errorf("parseViewed(%s) = %+v", out, v)
		}
	}
	if v := parseViewed([]byte(`{"version": "3.26.0", "engines": {"node": ">=22"}}`)); v == nil || v.Version != "3.26.0" {
		t.Errorf("parseViewed = %+v", v)
	}
}
