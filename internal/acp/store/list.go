package store

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// Page is one page of a list: the sessions, most recently updated first,
// and the cursor of the next page ("" at the end).
type Page struct {
	Sessions []Meta
	Next     string
	// Problems are the files left out of the list because their first
	// line cannot be read, in words.
	Problems []error
}

// cursor is where a page ends: the last session it holds, in the list's
// order. It travels as base64 of its JSON, which clients treat as
// opaque.
type cursor struct {
	Updated time.Time `json:"u"`
	ID      string    `json:"id"`
}

// ErrBadCursor is a cursor this store did not give.
var ErrBadCursor = errors.New("the cursor is not one gemkit gave: list again from the first page")

// List is the page after cur ("" for the first) of the sessions whose
// folder is cwd ("" for every session), most recently updated first. A
// session whose first line reads well is listed even when its messages
// do not: loading it tells what is wrong.
func (s *Store) List(cwd, cur string) (Page, error) {
	var after *cursor
	if cur != "" {
		c, err := decodeCursor(cur)
		if err != nil {
			return Page{}, err
		}
		after = &c
	}
	all, problems, err := s.metas()
	if err != nil {
		return Page{}, err
	}
	var out []Meta
	for _, m := range all {
		if cwd != "" && filepath.Clean(m.Cwd) != filepath.Clean(cwd) {
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return before(out[i], out[j]) })
	if after != nil {
		i := sort.Search(len(out), func(i int) bool { return before(Meta{Updated: after.Updated, ID: after.ID}, out[i]) })
		out = out[i:]
	}
	p := Page{Problems: problems}
	if len(out) > pageSize {
		out = out[:pageSize]
		last := out[len(out)-1]
		b, _ := json.Marshal(cursor{Updated: last.Updated, ID: last.ID})
		p.Next = base64.RawURLEncoding.EncodeToString(b)
	}
	p.Sessions = out
	return p, nil
}

// before orders the list: most recently updated first, then by id.
func before(a, b Meta) bool {
	if !a.Updated.Equal(b.Updated) {
		return a.Updated.After(b.Updated)
	}
	return a.ID < b.ID
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || !ValidID(c.ID) {
		return cursor{}, ErrBadCursor
	}
	return c, nil
}

// metas reads the first line of every session of the folder; the files
// whose first line cannot be read are Problems.
func (s *Store) metas() ([]Meta, []error, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the sessions folder: %w", err)
	}
	var out []Meta
	var problems []error
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ext)
		if !ok || !ValidID(id) || !e.Type().IsRegular() {
			continue
		}
		m, err := s.cachedMeta(id, e)
		if err != nil {
			problems = append(problems, &Problem{ID: id, Path: s.path(id), Why: err.Error()})
			continue
		}
		out = append(out, *m)
	}
	return out, problems, nil
}

// cachedMeta is the first line of the session id's file, the folder's
// entry e: read again only when the file's size or time changed since it
// was last read.
func (s *Store) cachedMeta(id string, e fs.DirEntry) (*Meta, error) {
	fi, err := e.Info()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	h, ok := s.heads[id]
	s.mu.Unlock()
	if ok && h.size == fi.Size() && h.mod.Equal(fi.ModTime()) {
		m := h.meta
		return &m, nil
	}
	m, err := s.readMeta(id)
	if err != nil {
		s.mu.Lock()
		delete(s.heads, id)
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Lock()
	if s.heads == nil {
		s.heads = map[string]head{}
	}
	s.heads[id] = head{size: fi.Size(), mod: fi.ModTime(), meta: *m}
	s.mu.Unlock()
	return m, nil
}

// readMeta reads the first line of the session id's file.
func (s *Store) readMeta(id string) (*Meta, error) {
	f, err := fsutil.OpenRegular(s.path(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMeta(bufio.NewReaderSize(f, maxHeader), id)
}

// prune removes the sessions updated longest ago (by their files' times)
// while the folder holds more than maxSessions; keep is never removed.
func (s *Store) prune(keep string) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil || len(entries) <= s.maxSessions {
		return err
	}
	type aged struct {
		id string
		t  time.Time
	}
	var all []aged
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ext)
		if !ok || !ValidID(id) || id == keep {
			continue
		}
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{id, fi.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
	for i := 0; i < len(all)+1-s.maxSessions; i++ {
		if err := s.Delete(all[i].id); err != nil {
			return err
		}
	}
	return nil
}
