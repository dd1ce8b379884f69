package lspserver

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// DefaultSaveHold is how long the file on disk keeps its text from before
// a proposal accepted by saving, waiting for the agent's own write.
const DefaultSaveHold = 10 * time.Second

// A proposal accepted by saving its buffer is on disk before the agent
// hears of it: the editor wrote it. The agent then reads the file to
// tell what changed and writes it: Gemini CLI's write_file and replace
// read the file once the IDE's answer has come (gemini-cli 0.61.0
// packages/core/src/tools/write-file.ts, execute: getCorrectedFileContent
// then getDiffStat; packages/core/src/scheduler/modifier.ts,
// applyInlineModify), so with the saved text already there it saw no
// change and showed "Accepted (+0, -0) No changes detected.", and told
// its model the same. So gemkit puts the file's earlier text back before
// it answers, as the plugins' diff views never write the file: the agent
// reads what it read when it proposed the change, and writes the accepted
// text. Nothing the person saved is lost: when the agent has not written
// the file within [Options.SaveHold], or when gemkit stops first, and the
// file still holds exactly what gemkit put back, gemkit writes the
// editor's saved bytes again.

// acceptSaved resolves p, whose buffer the editor has just saved, with
// the saved text, once the file on disk holds its earlier text again.
func (s *Server) acceptSaved(p *proposal) {
	if !s.take(p) {
		return
	}
	content := s.bufferText(p)
	h := s.unsave(p)
	s.clearMarks(p)
	s.events().DiffAccepted(p.path, content)
	if h == nil {
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		s.giveBack(h)
		return
	}
	s.holds.Add(1)
	s.mu.Unlock()
	go s.keep(h)
}

// held is a file whose saved text gemkit took back from the disk.
type held struct {
	path string
	// saved is what the editor wrote, to be written again if nobody
	// else writes the file.
	saved []byte
	// back is the text gemkit put back, and after the file it left
	// (nil when it removed the file: the proposal made it).
	back  []byte
	after fs.FileInfo
}

// unsave puts back the text the file had on disk when p was proposed,
// now that the editor has saved p's buffer, and returns what it must
// keep an eye on; nil when there is nothing to undo or it cannot be.
func (s *Server) unsave(p *proposal) *held {
	path, err := filepath.EvalSymlinks(p.path) // the link stays a link
	if err != nil {
		return nil
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if p.existed && bytes.Equal(saved, p.disk) {
		return nil // saved as it was: the agent sees no change, truly
	}
	h := &held{path: path, saved: saved, back: p.disk}
	if p.existed {
		err = fsutil.ReplaceFile(path, p.disk)
	} else {
		err = os.Remove(path)
	}
	if err != nil {
		s.log.Warn("lsp: the saved proposal stays on disk; the agent will see no change", "path", path, "err", err)
		return nil
	}
	if p.existed {
		if h.after, err = os.Stat(path); err != nil {
			h.after = nil
		}
	}
	return h
}

// touched reports whether someone changed h's file since gemkit put its
// earlier text back (the agent's write, or anything else).
func (h *held) touched() bool {
	fi, err := os.Stat(h.path)
	if h.after == nil {
		return err == nil || !errors.Is(err, fs.ErrNotExist)
	}
	return err != nil || !os.SameFile(fi, h.after) || !fi.ModTime().Equal(h.after.ModTime()) || fi.Size() != h.after.Size()
}

// untouched reports whether h's file still holds exactly what gemkit put
// back (or is still absent).
func (h *held) untouched() bool {
	if h.touched() {
		return false
	}
	if h.after == nil {
		return true
	}
	b, err := os.ReadFile(h.path)
	return err == nil && bytes.Equal(b, h.back)
}

// keep waits for the agent to write h's file; when it has not within
// the hold, or the server stops holding first, it writes the saved bytes
// again if the file is still as gemkit left it.
func (s *Server) keep(h *held) {
	defer s.holds.Done()
	hold := time.NewTimer(s.opts.SaveHold)
	defer hold.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-tick.C:
			if h.touched() {
				return
			}
		case <-hold.C:
			break wait
		case <-s.released:
			break wait
		}
	}
	s.giveBack(h)
}

// releaseHolds gives back, now, every saved text still waiting for the
// agent's write, and holds no more: the server is stopping. stopped, set
// under s.mu, orders the Wait after every holds.Add (acceptSaved adds
// under s.mu unless stopped).
func (s *Server) releaseHolds() {
	s.mu.Lock()
	if !s.stopped {
		s.stopped = true
		close(s.released)
	}
	s.mu.Unlock()
	s.holds.Wait()
}

// giveBack writes h's saved bytes again if the file is still as gemkit
// left it.
func (s *Server) giveBack(h *held) {
	if !h.untouched() {
		return
	}
	if err := fsutil.ReplaceFile(h.path, h.saved); err != nil {
		s.log.Error("lsp: the text saved in the editor could not be written back", "path", h.path, "err", err)
		return
	}
	s.log.Warn("lsp: no agent wrote the proposal accepted by saving; the saved text is back on disk", "path", h.path, "waited", s.opts.SaveHold)
}
