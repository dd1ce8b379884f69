package fsutil

import "time"

// poll calls check once a second until done is closed or it acted.
func poll(done <-chan struct{}, check func() bool) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if check() {
				return
			}
		}
	}
}
