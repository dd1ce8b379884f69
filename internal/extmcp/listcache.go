package extmcp

import (
	"sync/atomic"
	"time"
)

// listCache is what a server offers as gemkit last listed it, and the
// state of the kept catalog answered from before it started (kept.go):
// a server is listed once, and again only after it said a list of its
// changed. The server's mu guards it but for stale, which the server's
// notifications set while a stop may hold mu.
type listCache struct {
	catalog Catalog // what it offers, as last listed
	listed  bool
	stale   atomic.Bool // it said a list changed since it was listed
	// keptTried: the kept catalog was looked for; consent: the consent
	// check the next start uses, begun for the answer from it;
	// confirmErr: why the server, started behind that answer, could not
	// list, said at the next listing.
	keptTried  bool
	consent    *verdict
	confirmErr error
	keptJSON   []byte // the kept catalog as this server last read or wrote it
}

// fresh is the catalog as last listed, when no list changed since.
func (c *listCache) fresh() (Catalog, bool) {
	if c.listed && !c.stale.Load() {
		return c.catalog, true
	}
	return Catalog{}, false
}

// set records a listing.
func (c *listCache) set(cat Catalog) { c.catalog, c.listed = cat, true }

// takeConfirmErr returns, once, why the start behind a kept answer
// could not list.
func (c *listCache) takeConfirmErr() error {
	err := c.confirmErr
	c.confirmErr = nil
	return err
}

// takeConsent returns, once, the consent check begun for a kept answer,
// for the start behind it, or begun ahead (Prepare) within aheadFor.
func (c *listCache) takeConsent() *verdict {
	v := c.consent
	c.consent = nil
	if v != nil && v.ahead && time.Since(v.began) > aheadFor {
		return nil
	}
	return v
}
