// Package envmap reads a process's environment, a list of KEY=VALUE
// entries as os.Environ gives it, as a map: the one way every package
// that builds a sandboxed process's profile (toolrun, exthook, extmcp,
// pkgrun, langserver) reads the person's environment. It imports
// nothing of gemkit's.
package envmap

import "strings"

// Map is an environment by variable name.
type Map map[string]string

// Of is environ as a Map: an entry without "=" is left out, and of a
// variable set twice the last entry wins, as os/exec's Cmd.Env keeps it
// for the program it starts.
func Of(environ []string) Map {
	m := make(Map, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Get is m's value of k, "" when unset: m as an os.Getenv.
func (m Map) Get(k string) string { return m[k] }
