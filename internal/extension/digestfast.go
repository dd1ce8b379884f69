package extension

import (
	"crypto/sha256"
	"io/fs"
	"path"
	"sync"

	"github.com/gemkit/gemkit/internal/fsutil"
)

// The fast check. A warm consent check (a server's start, a tool's run)
// of an extension that has not changed needs to know only that: that
// every entry the digest covers is as the cache recorded it. The cache
// records, beside each file, each folder's stat, and the digest its walk
// found. A folder's mtime and ctime change whenever a name is made,
// removed or renamed in it (and the ctime cannot be set back, as for a
// file: digestcache.go), so a folder whose device, inode, size, mode,
// mtime and ctime match its record holds the names it held then; a
// file whose stat matches holds its bytes. fast stats every folder and
// every entry the cache names, beneath the folders it holds open, with
// no folder listed, no file opened and nothing sorted or hashed: when
// every stat matches and none is racy (RacyWindow), the tree is the one
// the recorded digest was taken of, and that digest is the check's.
// Anything else (a stat that differs, a name gone, a folder that is now
// a link, a racy entry, a damaged cache) falls back to the full walk,
// which writes the cache anew. The records are the whole of the folder
// by construction: a full walk writes them all, with their count, in
// one atomic write.

// fastPart is what one worker of fast found in its run of records.
type fastPart struct {
	ok     bool
	hits   int
	shared []string
	links  map[string]string
}

// fast returns the Content of root's tree from the cache when the tree
// is the one it recorded (see above); ok is false otherwise.
func (c *digestCache) fast(root *fsutil.Root) (Content, bool) {
	if !c.present() {
		return Content{}, false
	}
	recs := c.entries()
	if c.digest == "" || len(recs) == 0 || recs[0].rel != "." || !recs[0].isDir() {
		return Content{}, false
	}
	// Runs of records at once, each worker with folders of its own
	// open: the stats, not the comparisons, are the cost.
	n := 1
	if len(recs) >= 2048 {
		n = contentWorkers()
	}
	parts := make([]fastPart, n)
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := len(recs)*i/n, len(recs)*(i+1)/n
		wg.Go(func() { parts[i] = c.restat(root, recs[lo:hi]) })
	}
	wg.Wait()
	var out Content
	hits := 0
	for _, p := range parts {
		if !p.ok {
			return Content{}, false
		}
		hits += p.hits
		out.Shared = append(out.Shared, p.shared...)
		for rel, dest := range p.links {
			if out.LinksOut == nil {
				out.LinksOut = map[string]string{}
			}
			out.LinksOut[rel] = dest
		}
	}
	c.hits.Add(int64(hits))
	c.fasted = true
	out.Digest = c.digest
	out.loadFiles = func() map[string]string {
		m := make(map[string]string, len(recs))
		for i := range recs {
			e := &recs[i]
			mode := fs.FileMode(e.key.Mode)
			switch {
			case e.isDir():
			case mode&fs.ModeSymlink != 0:
				s := sha256.Sum256([]byte(e.target))
				m[e.rel] = fileState(mode, s[:])
			default:
				m[e.rel] = fileState(mode, e.sum)
			}
		}
		return m
	}
	return out, true
}

// restat stats the entries of recs, a run of the cache's records, and
// says whether each matches its record and is not racy; with what the
// full walk would have noted of them (the files with another name, the
// links out).
func (c *digestCache) restat(root *fsutil.Root, recs []cacheEntry) (p fastPart) {
	rs, err := root.Restat()
	if err != nil {
		return fastPart{}
	}
	defer rs.Close()
	for i := range recs {
		e := &recs[i]
		var st fsutil.ScanStat
		switch {
		case e.rel == "." && e.isDir():
			st, err = rs.Dir("")
		case e.isDir():
			st, err = rs.Dir(e.rel)
		default:
			dir, name := path.Split(e.rel)
			if dir != "" {
				dir = dir[:len(dir)-1]
			}
			st, err = rs.Lstat(dir, name)
		}
		if err != nil {
			return fastPart{}
		}
		k, ok := statKeyOf(&st)
		if !ok || k != e.key || racy(k, c.written) {
			return fastPart{}
		}
		switch mode := fs.FileMode(e.key.Mode); {
		case mode.IsRegular():
			p.hits++
			if st.Nlink > 1 {
				p.shared = append(p.shared, e.rel)
			}
		case mode&fs.ModeSymlink != 0:
			if dest, out := linkOut(root, e.rel, e.target); out {
				if p.links == nil {
					p.links = map[string]string{}
				}
				p.links[e.rel] = dest
			}
		}
	}
	p.ok = true
	return p
}

// rootStat is the stat of root's own folder, by its descriptor.
func rootStat(root *fsutil.Root) (fsutil.ScanStat, error) {
	rs, err := root.Restat()
	if err != nil {
		return fsutil.ScanStat{}, err
	}
	defer rs.Close()
	return rs.Dir("")
}
