package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemkit/gemkit/internal/model"
)

func sample(id, cwd string, updated time.Time) *Session {
	return &Session{
		Meta: Meta{ID: id, Cwd: cwd, Title: "Write a.txt", Created: updated.Add(-time.Minute), Updated: updated, Model: "gemini-2.5-pro", Mode: "autoEdit"},
		History: []model.Message{
			{Role: model.User, Text: "Write a.txt"},
			{Role: model.Assistant, Text: "I will.", Calls: []model.Call{{ID: "c1", Name: "propose_edit", Args: json.RawMessage(`{"path":"a.txt","content":"x"}`)}}},
			{Role: model.Tool, Results: []model.Result{{CallID: "c1", Name: "propose_edit", Text: "The person rejected the edit of a.txt", IsError: true}}},
			{Role: model.Assistant, Text: "Understood."},
		},
	}
}

// TestRoundTrip: what is saved loads back as it was, in a private file
// of a private folder.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	s := Open(dir)
	want := sample(NewID(), "/work/project", time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC))
	want.AdditionalDirectories = []string{"/work/lib"}
	if err := s.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(want.ID)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) || got.Version != Version || got.Messages != 4 {
		t.Errorf("loaded\n%s\nwant\n%s", g, w)
	}
	for p, mode := range map[string]os.FileMode{dir: 0o700, s.path(want.ID): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, mode)
		}
	}
}

// TestProblems: a file that is not a session as this gemkit writes it is
// told in words naming it and what is wrong, left byte for byte as it
// was, and keeps no other session from loading or being listed.
func TestProblems(t *testing.T) {
	const cwd = "/work/project"
	good := func(mut func(m map[string]any)) string {
		m := map[string]any{"version": Version, "id": "bad", "cwd": cwd, "createdAt": "2026-08-01T10:00:00Z", "updatedAt": "2026-08-01T10:00:00Z", "messages": 1}
		mut(m)
		b, _ := json.Marshal(m)
		return string(b) + "\n"
	}
	msg := `{"role":"user","text":"hi"}` + "\n"
	for _, c := range []struct {
		name, file, words string
		listed            bool
	}{
		{"empty", "", "the file is empty", false},
		{"not json", "{oops\n", "line 1 is not a session's description", false},
		{"older", good(func(m map[string]any) { delete(m, "version") }) + msg, "written by an older gemkit", false},
		{"newer", good(func(m map[string]any) { m["version"] = Version + 1 }) + msg, "written by a newer gemkit (format 2; this gemkit reads format 1)", false},
		{"other id", good(func(m map[string]any) { m["id"] = "other" }) + msg, `names the session "other"`, false},
		{"relative cwd", good(func(m map[string]any) { m["cwd"] = "project" }) + msg, "not an absolute path", false},
		{"bad message", good(func(map[string]any) {}) + "{\n", "line 2 is not a message", true},
		{"cut short", good(func(m map[string]any) { m["messages"] = 3 }) + msg, "it is cut short: it holds 1 of the 3 messages", true},
		{"too many", good(func(map[string]any) {}) + msg + msg, "line 3: more messages than the 1 line 1 counts", true},
		{"stranger", good(func(map[string]any) {}) + `{"role":"system","text":"x"}` + "\n", `a message from "system"`, true},
		{"long first line", strings.Repeat(" ", maxHeader+1) + "\n", "first line is longer than", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := Open(dir)
			ok := sample("fine", cwd, time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
			if err := s.Save(ok); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(dir, "bad"+ext)
			os.WriteFile(bad, []byte(c.file), 0o600)
			_, err := s.Load("bad")
			var p *Problem
			if !errors.As(err, &p) || !strings.Contains(err.Error(), c.words) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "kept as it is") {
				t.Errorf("load: %v, want words %q", err, c.words)
			}
			if data, _ := os.ReadFile(bad); string(data) != c.file {
				t.Errorf("the damaged file changed: %q", data)
			}
			if _, err := s.Load("fine"); err != nil {
				t.Errorf("the good session: %v", err)
			}
			page, err := s.List(cwd, "")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range page.Sessions {
				ids = append(ids, m.ID)
			}
			want := "fine"
			if c.listed {
				want = "bad fine"
			}
			if strings.Join(ids, " ") != want || (len(page.Problems) == 1) == c.listed {
				t.Errorf("listed %v, problems %v", ids, page.Problems)
			}
			if err := s.Delete("bad"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(bad); !os.IsNotExist(err) {
				t.Errorf("delete left %s: %v", bad, err)
			}
		})
	}
}

// TestList: filtered by folder, most recent first, in pages whose cursor
// leads on without repeating or skipping, a cursor gemkit did not give
// refused.
func TestList(t *testing.T) {
	s := Open(t.TempDir())
	t0 := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 250; i++ {
		cwd := "/a"
		if i%5 == 0 {
			cwd = "/b"
		}
		// Two sessions share each time: the id orders them.
		if err := s.Save(sample(fmt.Sprintf("s%03d", i), cwd, t0.Add(time.Duration(i/2)*time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		cwd   string
		pages []int
	}{{"", []int{100, 100, 50}}, {"/a", []int{100, 100}}, {"/b/", []int{50}}, {"/c", []int{0}}} {
		var seen []Meta
		cur := ""
		for i, n := range c.pages {
			p, err := s.List(c.cwd, cur)
			if err != nil || len(p.Sessions) != n || (p.Next == "") != (i == len(c.pages)-1) {
				t.Fatalf("%q page %d: %d sessions, next %q, %v", c.cwd, i, len(p.Sessions), p.Next, err)
			}
			seen, cur = append(seen, p.Sessions...), p.Next
		}
		for i := 1; i < len(seen); i++ {
			if !before(seen[i-1], seen[i]) {
				t.Errorf("%q: %s before %s", c.cwd, seen[i-1].ID, seen[i].ID)
			}
		}
	}
	if _, err := s.List("", "not-a-cursor"); !errors.Is(err, ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

// TestBounds: past the file's bound the earliest exchanges are left out,
// counted, and every tool result stays after its call; past the count
// of sessions, storing a new one removes those updated longest ago.
func TestBounds(t *testing.T) {
	s := Open(t.TempDir())
	s.maxFile = maxHeader + 4000
	sess := sample("long", "/a", time.Now())
	var h []model.Message
	for i := 0; i < 40; i++ {
		h = append(h, sess.History...)
	}
	sess.History = h
	if err := s.Save(sess); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("long")
	if err != nil {
		t.Fatal(err)
	}
	if got.Dropped == 0 || got.Dropped%4 != 0 || got.Dropped+len(got.History) != 160 || got.History[0].Role != model.User {
		t.Errorf("dropped %d, kept %d starting with %q", got.Dropped, len(got.History), got.History[0].Role)
	}
	if fi, _ := os.Stat(s.path("long")); fi.Size() > int64(s.maxFile) {
		t.Errorf("file of %d bytes", fi.Size())
	}

	s = Open(t.TempDir())
	s.maxSessions = 3
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("s%d", i)
		if err := s.Save(sample(id, "/a", time.Now())); err != nil {
			t.Fatal(err)
		}
		// File times order the sessions: give each its own second.
		tm := time.Now().Add(time.Duration(i-10) * time.Second)
		os.Chtimes(s.path(id), tm, tm)
	}
	p, _ := s.List("", "")
	var ids []string
	for _, m := range p.Sessions {
		ids = append(ids, m.ID)
	}
	if len(ids) != 3 || strings.Contains(strings.Join(ids, " "), "s0") || strings.Contains(strings.Join(ids, " "), "s1") {
		t.Errorf("kept %v", ids)
	}
}

// TestIDs: an id that could name another file is never used as one.
func TestIDs(t *testing.T) {
	s := Open(t.TempDir())
	for _, id := range []string{"", "../x", "a/b", "a.b", ".", strings.Repeat("a", 129), "a\x00"} {
		if ValidID(id) {
			t.Errorf("%q is valid", id)
		}
		if _, err := s.Load(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("load %q: %v", id, err)
		}
		if err := s.Save(&Session{Meta: Meta{ID: id, Cwd: "/a"}}); err == nil {
			t.Errorf("saved %q", id)
		}
	}
	if id := NewID(); !ValidID(id) || !strings.HasPrefix(id, "gemkit-") || len(id) != 39 || id == NewID() {
		t.Errorf("new id %q", id)
	}
	if err := s.Delete("never-was"); err != nil {
		t.Errorf("delete of a session never stored: %v", err)
	}
}

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{
		"\n\n  Fix   the\tbug \nmore": "Fix the bug",
		"":                            "",
		strings.Repeat("é", 150):      strings.Repeat("é", 99) + "…",
		"Content of a.txt:\n```\nx":   "Content of a.txt:",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestListSeesChanges: a list reads a file's first line again once the
// file changed since the last list (a title given, a file damaged by
// hand), and keeps nothing of a deleted or damaged one.
func TestListSeesChanges(t *testing.T) {
	s := Open(t.TempDir())
	t0 := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	a := sample("a", "/w", t0)
	a.Title = ""
	s.Save(a)
	s.Save(sample("b", "/w", t0))
	if p, _ := s.List("", ""); len(p.Sessions) != 2 || p.Sessions[0].Title != "" {
		t.Fatalf("%+v", p.Sessions)
	}
	a.Title, a.Updated, a.Dropped = "Now titled", t0.Add(time.Hour), 0
	s.Save(a)
	if err := os.WriteFile(s.path("b"), []byte("damaged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _ := s.List("", "")
	if len(p.Sessions) != 1 || p.Sessions[0].Title != "Now titled" || len(p.Problems) != 1 {
		t.Errorf("after the changes: %+v, problems %v", p.Sessions, p.Problems)
	}
	s.Delete("a")
	if p, _ := s.List("", ""); len(p.Sessions) != 0 || len(s.heads) != 0 {
		t.Errorf("after delete: %+v, %d first lines kept", p.Sessions, len(s.heads))
	}
}
