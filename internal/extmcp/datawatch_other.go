//go:build !linux

package extmcp

// watchFolder calls check once a second until done is closed or check
// says it acted (no inotify here).
func watchFolder(dir string, done <-chan struct{}, check func() bool) {
	if check() {
		return
	}
	poll(done, check)
}
