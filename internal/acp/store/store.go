// Package store keeps the conversations of `gemkit acp` on disk, so that
// an editor can list, load, resume and delete them after the agent, or
// the editor, restarts (ACP's session/list, session/load, session/resume
// and session/delete).
//
// Each session is one file, ID.jsonl, in the store's folder
// (gemkitdir.ACPSessions: ~/.local/share/gemkit/acp-sessions, 0700): a
// first line with what a list shows (Meta, with the file's format
// Version), then one line per message of the model's conversation
// (model.Message), oldest first. A list reads first lines only. Every
// write replaces the whole file atomically (fsutil.WriteFileAtomic, 0600),
// so a reader never sees half a session.
//
// Bounds: a file holds at most MaxFile bytes; past it the earliest
// exchanges are left out of the file (Meta.Dropped counts the messages
// left out), while the agent that runs keeps them. The folder holds at
// most MaxSessions sessions; storing one more removes the sessions
// updated longest ago. A file that cannot be read as this gemkit writes
// it (damaged, or written by an older or newer gemkit) is left as it is
// and told in words (*Problem); it never stops the others being read.
package store

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gemkit/gemkit/internal/fsutil"
	"github.com/gemkit/gemkit/internal/gemkitdir"
	"github.com/gemkit/gemkit/internal/model"
)

// Version is the format of the files this gemkit writes. A file with
// another version is not read as a session: it is told in words.
const Version = 1

// Bounds.
const (
	// MaxFile bounds one session's file.
	MaxFile = 32 << 20
	// MaxSessions bounds how many sessions the folder keeps.
	MaxSessions = 2000
	// maxHeader bounds a file's first line.
	maxHeader = 64 << 10
	// maxTitle bounds a title, in characters.
	maxTitle = 100
	// pageSize is how many sessions one page of a list holds.
	pageSize = 100
)

// ext is the files' extension.
const ext = ".jsonl"

// Meta is a session's first line: what a list shows and what a session
// restores besides its messages.
type Meta struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Cwd is the session's folder, absolute, as the client gave it.
	Cwd string `json:"cwd"`
	// AdditionalDirectories are the roots the client gave besides Cwd.
	AdditionalDirectories []string  `json:"additionalDirectories,omitempty"`
	Title                 string    `json:"title,omitempty"`
	Created               time.Time `json:"createdAt"`
	Updated               time.Time `json:"updatedAt"`
	// Model is the model chosen for the session ("": the configured one).
	Model string `json:"model,omitempty"`
	// Mode is the session's approval mode ("": the default).
	Mode string `json:"mode,omitempty"`
	// Messages is how many message lines follow.
	Messages int `json:"messages"`
	// Dropped is how many earliest messages the file no longer holds
	// (MaxFile). Given to Save, it is how many the History given already
	// lacks; Save adds those it leaves out.
	Dropped int `json:"dropped,omitempty"`
}

// Session is a stored session: its Meta and its conversation.
type Session struct {
	Meta
	History []model.Message
}

// Problem is a session's file that cannot be read as a session, in
// words: which file, what is wrong, and that it is kept as it is.
type Problem struct {
	ID, Path string
	Why      string
}

func (p *Problem) Error() string {
	return fmt.Sprintf("the stored session %s cannot be read: %s; its file %s is kept as it is (move it away, or delete the session, to be rid of it)", p.ID, p.Why, p.Path)
}

// ErrNotFound is a session the store does not hold.
var ErrNotFound = errors.New("no such stored session")

// Store is a folder of sessions.
type Store struct {
	dir string
	// maxFile and maxSessions are MaxFile and MaxSessions, smaller in
	// tests.
	maxFile, maxSessions int

	// mu guards heads: the first lines already read, by id, each with
	// the file's size and time when read, so that a list (a page at a
	// time, each reading the folder again) opens only the files that
	// changed.
	mu    sync.Mutex
	heads map[string]head
}

// head is a file's first line as read, and the file as it was then.
type head struct {
	size int64
	mod  time.Time
	meta Meta
}

// Open is the store in dir; the folder is made (0700) when the first
// session is stored.
func Open(dir string) *Store { return &Store{dir: dir, maxFile: MaxFile, maxSessions: MaxSessions} }

// ForHome is the store of the account whose home folder is home
// (gemkitdir.ACPSessions), or nil when home is not an absolute path.
func ForHome(home string) *Store {
	if !filepath.IsAbs(home) {
		return nil
	}
	return Open(gemkitdir.ACPSessions(home))
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// NewID is a new session id: "gemkit-" and 32 random hex digits, unique
// across restarts and machines.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return "gemkit-" + hex.EncodeToString(b[:])
}

// ValidID reports an id the store may hold: 1 to 128 letters, digits,
// '-' and '_', so that it names a file of the folder and nothing else.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (s *Store) path(id string) string { return filepath.Join(s.dir, id+ext) }

// Title is the title a session gets from its first prompt: the first
// line that has words, at most 100 characters.
func Title(prompt string) string {
	for _, line := range strings.Split(prompt, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > maxTitle {
			r := []rune(line)
			line = string(r[:maxTitle-1]) + "…"
		}
		return line
	}
	return ""
}

// Save stores sess whole, replacing what was stored of it; Version and
// Messages are set here, and Dropped counts what MaxFile leaves out.
// Storing a new session past MaxSessions removes the ones updated
// longest ago.
func (s *Store) Save(sess *Session) error {
	if !ValidID(sess.ID) {
		return fmt.Errorf("session id %q cannot name a file", sess.ID)
	}
	data, err := encode(sess, s.maxFile)
	if err != nil {
		return err
	}
	if err := s.mkdir(); err != nil {
		return err
	}
	p := s.path(sess.ID)
	_, statErr := os.Lstat(p)
	if err := fsutil.WriteFileAtomic(p, data, 0o600); err != nil {
		return fmt.Errorf("store the session %s: %w", sess.ID, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		return s.prune(sess.ID)
	}
	return nil
}

// mkdir makes the folder, private: one made wider by hand is narrowed.
func (s *Store) mkdir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("make the sessions folder: %w", err)
	}
	fi, err := os.Stat(s.dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return os.Chmod(s.dir, 0o700)
	}
	return nil
}

// encode is sess as its file holds it: the first line, then one line a
// message, the earliest exchanges left out past maxFile bytes.
func encode(sess *Session, maxFile int) ([]byte, error) {
	lines := make([][]byte, len(sess.History))
	total := 0
	for i, m := range sess.History {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode message %d: %w", i+1, err)
		}
		lines[i] = b
		total += len(b) + 1
	}
	first := 0
	for total > maxFile-maxHeader && first < len(lines) {
		next := nextExchange(sess.History, first)
		for _, l := range lines[first:next] {
			total -= len(l) + 1
		}
		first = next
	}
	sess.Version = Version
	sess.Dropped += first
	sess.History = sess.History[first:]
	sess.Messages = len(sess.History)
	head, err := json.Marshal(sess.Meta)
	if err != nil {
		return nil, err
	}
	if len(head) >= maxHeader {
		return nil, fmt.Errorf("the session's description is larger than %d bytes", maxHeader)
	}
	var buf bytes.Buffer
	buf.Grow(total + len(head) + 1)
	buf.Write(head)
	buf.WriteByte('\n')
	for _, l := range lines[first:] {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// nextExchange is the index of the first person's message after i that
// begins an exchange (one that answers no tool call), or len(h): leaving
// out whole exchanges keeps every tool result after its call.
func nextExchange(h []model.Message, i int) int {
	for j := i + 1; j < len(h); j++ {
		if h[j].Role == model.User && h[j-1].Role != model.Tool && len(h[j-1].Calls) == 0 {
			return j
		}
	}
	return len(h)
}

// Load reads the session id: ErrNotFound when the store does not hold
// it, a *Problem when its file cannot be read as a session.
func (s *Store) Load(id string) (*Session, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	p := s.path(id)
	f, err := fsutil.OpenRegular(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, &Problem{ID: id, Path: p, Why: err.Error()}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(s.maxFile) {
		return nil, &Problem{ID: id, Path: p, Why: fmt.Sprintf("it is larger than the %d MiB gemkit writes", s.maxFile>>20)}
	}
	r := bufio.NewReaderSize(io.LimitReader(f, int64(s.maxFile)+1), maxHeader)
	meta, err := readMeta(r, id)
	if err != nil {
		return nil, &Problem{ID: id, Path: p, Why: err.Error()}
	}
	sess := &Session{Meta: *meta, History: make([]model.Message, 0, meta.Messages)}
	if err := readMessages(r, sess); err != nil {
		return nil, &Problem{ID: id, Path: p, Why: err.Error()}
	}
	return sess, nil
}

// readMeta reads and checks a file's first line, that of the session id.
func readMeta(r *bufio.Reader, id string) (*Meta, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("its first line is longer than %d bytes", maxHeader)
	case errors.Is(err, io.EOF) && len(line) == 0:
		return nil, errors.New("the file is empty")
	case err != nil && !errors.Is(err, io.EOF):
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("line 1 is not a session's description: %v", err)
	}
	switch {
	case m.Version == 0:
		return nil, fmt.Errorf("it has no format version: it was written by an older gemkit, or by something else; this gemkit reads format %d", Version)
	case m.Version > Version:
		return nil, fmt.Errorf("it was written by a newer gemkit (format %d; this gemkit reads format %d)", m.Version, Version)
	case m.Version < Version:
		return nil, fmt.Errorf("it was written by an older gemkit (format %d; this gemkit reads format %d)", m.Version, Version)
	case m.ID != id:
		return nil, fmt.Errorf("line 1 names the session %q, not the one of its file name", m.ID)
	case !filepath.IsAbs(m.Cwd):
		return nil, fmt.Errorf("line 1 gives the folder %q, which is not an absolute path", m.Cwd)
	case m.Messages < 0:
		return nil, fmt.Errorf("line 1 counts %d messages", m.Messages)
	}
	return &m, nil
}

// readMessages reads the message lines that follow the first into sess.
func readMessages(r *bufio.Reader, sess *Session) error {
	n := 1
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			n++
			if len(sess.History) == sess.Messages {
				return fmt.Errorf("line %d: more messages than the %d line 1 counts", n, sess.Messages)
			}
			var m model.Message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				return fmt.Errorf("line %d is not a message: %v", n, jerr)
			}
			if m.Role != model.User && m.Role != model.Assistant && m.Role != model.Tool {
				return fmt.Errorf("line %d: a message from %q, who is not the person, the model or a tool", n, m.Role)
			}
			sess.History = append(sess.History, m)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if len(sess.History) != sess.Messages {
		return fmt.Errorf("it is cut short: it holds %d of the %d messages line 1 counts", len(sess.History), sess.Messages)
	}
	return nil
}

// Delete removes the session id; one the store does not hold is no
// error, as ACP's session/delete asks.
func (s *Store) Delete(id string) error {
	if !ValidID(id) {
		return nil
	}
	s.mu.Lock()
	delete(s.heads, id)
	s.mu.Unlock()
	err := os.Remove(s.path(id))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete the session %s: %w", id, err)
	}
	return nil
}
