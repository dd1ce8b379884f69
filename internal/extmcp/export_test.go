package extmcp

import "time"

// Queued is how many requests wait for the lock of m's server key: a
// test lets a start end once a call waits for it.
func Queued(m *Manager, key string) int32 {
	m.mu.Lock()
	s := m.servers[key]
	m.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.queued.Load()
}

// AgeConsent makes the consent check begun ahead for m's server key
// (Prepare) look begun d earlier, once it has ended: a test of what a
// start does with a check older than aheadFor.
func AgeConsent(m *Manager, key string, d time.Duration) bool {
	m.mu.Lock()
	s := m.servers[key]
	m.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.cache.consent
	if v == nil || !v.ahead {
		return false
	}
	<-v.done
	v.began = v.began.Add(-d)
	return true
}
