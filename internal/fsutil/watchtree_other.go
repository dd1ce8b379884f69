//go:build !linux

package fsutil

// WatchTree calls check once at the start and then once a second until
// done is closed or check says it is done (no inotify here).
func WatchTree(dir string, done <-chan struct{}, check func() bool) {
	if check() {
		return
	}
	poll(done, check)
}
