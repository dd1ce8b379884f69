package extension

import "time"

// ConsentGrantedAt is when the person last agreed to the extension name
// (zero when never, or when the records cannot be read), read from the
// records alone: what happened before it (a refusal of its servers) was
// under other terms.
func (s *Store) ConsentGrantedAt(name string) time.Time {
	recs, err := s.readConsent()
	if err != nil {
		return time.Time{}
	}
	return recs.Extensions[name].GrantedAt
}
