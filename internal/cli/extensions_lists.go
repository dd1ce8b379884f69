package cli

import (
	"slices"
)

// Small helpers on lists of names (servers, hooks) and their words,
// shared by the switch and doctor.

// sharedNames are the names of a also in b, in a's order.
func sharedNames(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// union is a with the names of b it lacks added.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// them is the pronoun for n things.
func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}
