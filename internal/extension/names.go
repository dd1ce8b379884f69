// The rules of the names a manifest holds (extension, tool, argument and
// environment variable names), and the name suggested for a bad one.

package extension

import (
	"strings"
)

// The bytes the names of the rules below are made of.
const (
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	digits  = "0123456789"
	spaces  = " \t\n\f\r" // \s of a regular expression
)

// word reports whether s is a byte of first followed by bytes of rest,
// at most max bytes in all (0: no bound). The rules of names are checked
// byte by byte: as regular expressions they were compiled at every start
// of gemkit, whatever the command, and that took longer than all the
// checks of list with 200 extensions.
func word(s, first, rest string, max int) bool {
	if s == "" || max > 0 && len(s) > max || strings.IndexByte(first, s[0]) < 0 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if strings.IndexByte(rest, s[i]) < 0 {
			return false
		}
	}
	return true
}

// ValidName reports whether name follows Gemini CLI's rule for extension
// names: letters, digits and dashes only.
func ValidName(name string) bool { return word(name, letters+digits+"-", letters+digits+"-", 0) }

// validToolName: a letter or _, then letters, digits, _ . or -, at most
// 64 bytes.
func validToolName(s string) bool { return word(s, letters+"_", letters+digits+"_.-", 64) }

// validArgName: a name that can be a command-line flag.
func validArgName(s string) bool { return word(s, letters, letters+digits+"_-", 0) }

// validEnvVar: a name that can be an environment variable's.
func validEnvVar(s string) bool { return word(s, letters+"_", letters+digits+"_", 0) }

// calledTool returns the name a tool_call such as "countWords(file=…)"
// calls: white space, a tool name (as validToolName, of any length),
// white space, then "(". ok is false when call does not start so.
func calledTool(call string) (name string, ok bool) {
	s := strings.TrimLeft(call, spaces)
	n := 0
	for n < len(s) && strings.IndexByte(letters+digits+"_.-", s[n]) >= 0 {
		n++
	}
	name = s[:n]
	if !word(name, letters+"_", letters+digits+"_.-", 0) || !strings.HasPrefix(strings.TrimLeft(s[n:], spaces), "(") {
		return "", false
	}
	return name, true
}

// suggestName turns s into a valid extension name.
func suggestName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if out == "" {
		return "my-extension"
	}
	return out
}
