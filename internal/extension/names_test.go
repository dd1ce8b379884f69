package extension

import (
	"regexp"
	"testing"
)

// The name rules as regular expressions, the way they were first
// written: the byte checks must agree with them.
var (
	nameRE     = regexp.MustCompile(`^[a-zA-Z0-9-]+$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)
	argNameRE  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	envVarRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	callRE     = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\(`)
)

// FuzzNameRulesMatchRegexps: each byte check answers as its regular
// expression does (go test -fuzz explores further).
func FuzzNameRulesMatchRegexps(f *testing.F) {
	for _, seed := range []string{
		"", "a", "my-ext", "-", "9lives", "_x", "a.b-c_d", "x y", "é", "a\n", "A_1",
		"countWords(file=\"a\")", "  \t slugify ( text = 1)", "x(", "(", "1x()", "a.b()", "a b()", "\fa\r(",
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd",
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcde",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range []struct {
			name string
			re   *regexp.Regexp
			got  bool
		}{
			{"ValidName", nameRE, ValidName(s)},
			{"validToolName", toolNameRE, validToolName(s)},
			{"validArgName", argNameRE, validArgName(s)},
			{"validEnvVar", envVarRE, validEnvVar(s)},
		} {
			if want := c.re.MatchString(s); c.got != want {
				t.Errorf("%s(%q) = %v, want %v", c.name, s, c.got, want)
			}
		}
		name, ok := calledTool(s)
		m := callRE.FindStringSubmatch(s)
		if ok != (m != nil) || ok && name != m[1] {
			t.Errorf("calledTool(%q) = %q, %v; want %q", s, name, ok, m)
		}
	})
}
