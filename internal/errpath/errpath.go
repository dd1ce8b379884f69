// Package errpath finds the absolute paths a program's error text
// names: the path a refused write or read was of, which the sandbox
// reports with the widening that allows it, when the kernel's refusal
// reached only the program. The toolrun and extmcp refusals read a
// tool's or a server's words with it.
package errpath

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The absolute paths a program's error names (Paths): quoted whole
// ('/a b', "/a", ‘/a’, `/a`), or a word that starts with a slash up to
// the next space, quote, colon, comma or bracket; never a slash inside a
// word (a relative x/y, node:internal/fs) or a URL's //.
var errorPath = sync.OnceValue(func() *regexp.Regexp {
	const end = `\s'"‘’` + "`" + `,:;()\[\]{}<>`
	return regexp.MustCompile(`(?:^|[^\w.~/-])(?:'(/[^'\n]*)'|"(/[^"\n]*)"|‘(/[^’\n]*)’|` + "`(/[^`\n]*)`" + `|(/[^/` + end + `][^` + end + `]*))`)
})

// programPrefix is the start of a line a program's error begins with,
// its own name: the C library's and coreutils' "PROGRAM: ", a shell's
// "PROGRAM: line N: " (bash), "PROGRAM: N: " (dash) or "PROGRAM:N: "
// (zsh), the program named as it was run (argv[0], a script's path).
// Group 1 is the line number.
var programPrefix = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\s*[^\s:'"]+:(\s*line \d+:|\s*\d+:)?\s+`)
})

// strerrorPath is a path the shells print unquoted, spaces and all:
// the C library's "PATH: strerror" (bash's "line 1: PATH: Read-only
// file system"), dash's "cannot create PATH: strerror" and zsh's
// "strerror: PATH".
var strerrorPath = sync.OnceValue(func() *regexp.Regexp {
	const words = `(?:read-only file system|permission denied|operation not permitted)`
	return regexp.MustCompile(`(?i)(?:^|:\s+|cannot create )(/[^\n:]*?):\s+` + words + `|` + words + `:\s+(/[^\n]*?)\s*$`)
})

// startsRefusal reports whether s, lower-case, begins with the words of
// a refused write or read, in the C library's and Node's messages.
func startsRefusal(s string) bool {
	for _, w := range [...]string{"read-only file system", "permission denied", "operation not permitted", "erofs", "eacces", "eperm"} {
		if strings.HasPrefix(s, w) {
			return true
		}
	}
	return false
}

// Paths are the absolute paths a program's error text names,
// cleaned, without repeats, in the order they come. The program's own
// name at the start of a line ("/usr/bin/bash: line 1: ", "sh: 1: ",
// "/usr/bin/touch: ") is not among them, unless what follows it is the
// error's words alone ("/a/b: Read-only file system", which names the
// path).
func Paths(text string) []string {
	var out []string
	add := func(p string) {
		if p = filepath.Clean(p); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if m := programPrefix().FindStringSubmatchIndex(line); m != nil {
			rest := strings.ToLower(line[m[1]:])
			if m[2] >= 0 || !startsRefusal(rest) {
				line = line[m[1]:]
			}
		}
		var spans [][2]int
		for _, m := range strerrorPath().FindAllStringSubmatchIndex(line, -1) {
			for g := 2; g < len(m); g += 2 {
				if m[g] >= 0 {
					spans = append(spans, [2]int{m[g], m[g+1]})
				}
			}
		}
		for _, m := range errorPath().FindAllStringSubmatchIndex(line, -1) {
			if m[10] < 0 {
				// Quoted.
				for g := 2; g < 10; g += 2 {
					if m[g] >= 0 {
						add(line[m[g]:m[g+1]])
					}
				}
				continue
			}
			p := strings.TrimRight(line[m[10]:m[11]], ".")
			if i := slices.IndexFunc(spans, func(s [2]int) bool { return s[0] <= m[10] && m[10] < s[1] }); i >= 0 {
				p = line[spans[i][0]:spans[i][1]]
			}
			add(p)
		}
	}
	return out
}
