package extview

import (
	"time"

	"github.com/gemkit/gemkit/internal/extension"
	"github.com/gemkit/gemkit/internal/extmcp"
	"github.com/gemkit/gemkit/internal/extswitch"
)

// Consent is the person's consent to an extension, as describe shows it.
type Consent struct {
	Granted bool `json:"granted"`
	// FilesChanged: consent was given for these permissions, but the
	// extension's files are not the ones agreed to (or the record
	// predates binding to them); the next run asks again.
	FilesChanged bool `json:"filesChanged,omitempty"`
	// Notice names the files that changed (extension.ContentNotice).
	Notice string `json:"-"`
	// Since is when the extension became what it is (extmcp.RefusalsSince):
	// its servers' refusals from before are not shown.
	Since time.Time `json:"-"`
}

// Describe is in as describe shows it: its Entry, with where its
// servers run (and the notes on their widening, getenv reading the
// person's environment), whether gemkit mcp serves them, where each of
// its parts that runs code runs, and its conflicts; and the person's
// consent to it. err is why the switch's records or the host's settings
// could not be read, for the caller to tell: what they would say is
// left out.
func Describe(sw *extswitch.Switch, in *extension.Installed, getenv func(string) string) (item Item, consent Consent, err error) {
	st := sw.Store
	item = Entry(st, in, nil)
	choices, gs, gsErr, err := sw.ServerSettings()
	if m := in.Manifest(); m != nil {
		item.ServerSandbox = sw.StateOf(m, choices[m.Name], gs.Excluded)
		item.ServerSandbox.SetUntold(gsErr)
		if s := item.ServerSandbox; s != nil {
			s.Notes = extswitch.WidenNotes(m, s.Grant.Union(s.Widening), choices[m.Name].Handed, gs, getenv, in.Settings(st.Dir(), st.Workspace()))
			sw.Served(s, in, choices[m.Name])
		}
		item.Choice = choices[m.Name]
		if gsErr == nil {
			// Where each part runs is read from the file.
			item.CodeParts = sw.CodeParts(in, choices[m.Name], gs)
		}
	}
	if cs, err := st.ConflictsWith(in.Entry); err == nil {
		item.Conflicts = cs
	}
	return item, consentOf(st, in), err
}

// consentOf is the person's consent to in as it is now.
func consentOf(st *extension.Store, in *extension.Installed) Consent {
	consent := Consent{Since: extmcp.RefusalsSince(st, in)}
	if m := in.Manifest(); m != nil {
		agreed, granted := st.ConsentContent(m.Name, extension.PermissionsHash(m))
		consent.Granted = granted
		if granted && in.Extension != nil {
			now, err := extension.ReadContent(in.Extension.Dir)
			consent.FilesChanged = err != nil || now.Digest != agreed.Digest
			if err == nil {
				consent.Notice = extension.ContentNotice(agreed, now, in.Extension.Dir)
			}
		}
	}
	return consent
}
