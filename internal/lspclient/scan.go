package lspclient

import (
	"bytes"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/codeintel"
)

// scanLocations reads a Location[] the common way servers write it
// (gopls's references: a thousand objects, 200 KB) without
// encoding/json's reflection, which takes milliseconds over it: each
// object's members "uri" (a string without escapes) and "range" (its
// start and end, each a line and a character of up to nine digits),
// once each, in any order, with any white space. It declines (ok false)
// anything else, which encoding/json then reads: what it reads it reads
// as encoding/json would (FuzzScanLocations).
func scanLocations(raw []byte) (locs []codeintel.Location, ok bool) {
	s := scanner{b: raw}
	if !s.byte('[') {
		return nil, false
	}
	// Four objects a location: the location, its range, start and end.
	locs = make([]codeintel.Location, 0, bytes.Count(raw, []byte{'{'})/4)
	// The answer names the same files again and again: each URI is
	// made a string, and parsed, once.
	type file struct{ uri, path string }
	files := map[string]file{}
	var last file
	if s.byte(']') {
		return locs, s.end()
	}
	for {
		uri, r, ok := s.location()
		if !ok {
			return nil, false
		}
		if string(uri) != last.uri {
			f, seen := files[string(uri)]
			if !seen {
				f.uri = string(uri)
				f.path = PathOf(f.uri)
				files[f.uri] = f
			}
			last = f
		}
		if last.path != "" {
			locs = append(locs, codeintel.Location{Path: last.path, Range: r})
		} else {
			locs = append(locs, codeintel.Location{URI: last.uri, Range: r})
		}
		if s.byte(',') {
			continue
		}
		if s.byte(']') {
			return locs, s.end()
		}
		return nil, false
	}
}

// scanner reads JSON tokens from b, from i on.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// byte reads c, after white space.
func (s *scanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads a string without escapes and returns its bytes.
func (s *scanner) str() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// num reads a non-negative integer of at most nine digits.
func (s *scanner) num() (int, bool) {
	s.space()
	start, v := s.i, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + int(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	if n == 0 || n > 9 || (n > 1 && s.b[start] == '0') {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return v, true
}

// members reads an object whose members are exactly the names given,
// once each, in any order; member reads the value of the i-th.
func (s *scanner) members(names []string, member func(i int) bool) bool {
	if !s.byte('{') {
		return false
	}
	var seen uint8
	for range names {
		key, ok := s.str()
		if !ok || !s.byte(':') {
			return false
		}
		i := -1
		for j, n := range names {
			if string(key) == n {
				i = j
			}
		}
		if i < 0 || seen&(1<<i) != 0 || !member(i) {
			return false
		}
		seen |= 1 << i
		if !s.byte(',') {
			break
		}
	}
	return seen == 1<<len(names)-1 && s.byte('}')
}

var (
	locationMembers = []string{"uri", "range"}
	rangeMembers    = []string{"start", "end"}
	positionMembers = []string{"line", "character"}
)

func (s *scanner) position(p *codeintel.Position) bool {
	return s.members(positionMembers, func(i int) bool {
		var ok bool
		if i == 0 {
			p.Line, ok = s.num()
		} else {
			p.Character, ok = s.num()
		}
		return ok
	})
}

func (s *scanner) location() (uri []byte, r codeintel.Range, ok bool) {
	ok = s.members(locationMembers, func(i int) bool {
		if i == 0 {
			var ok bool
			uri, ok = s.str()
			return ok
		}
		return s.members(rangeMembers, func(i int) bool {
			if i == 0 {
				return s.position(&r.Start)
			}
			return s.position(&r.End)
		})
	})
	return uri, r, ok
}
