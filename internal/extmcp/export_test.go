package extmcp

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
