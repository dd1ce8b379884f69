package extswitch

import (
	"slices"
	"strings"

	"github.com/gemkit/gemkit/internal/extension"
)

// Small helpers on lists of names (servers, hooks) and the words the
// switch's errors and findings say them in.

// SharedNames are the names of a also in b, in a's order.
func SharedNames(a, b []string) []string {
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

// PrintableNames joins names a manifest chose (its servers', its hooks'
// labels) with commas, each made printable (extension.Printable): a
// control character or a line break in one is shown escaped, so that it
// cannot clear the person's terminal, set its clipboard or fake a line.
func PrintableNames(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = extension.Printable(n)
	}
	return strings.Join(out, ", ")
}

// Them is the pronoun for n things.
func Them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// Plural is the "s" of n things.
func Plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// JoinAnd is list in words: "a", "a and b", "a, b and c".
func JoinAnd(list []string) string {
	if len(list) < 2 {
		return strings.Join(list, "")
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

// sentence is s begun with a capital letter, as a sentence of its own.
func sentence(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func isAre(n int) string {
	if n == 1 {
		return "it is"
	}
	return "they are"
}
