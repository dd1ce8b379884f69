package fsutil

import "sync"

// lifoWork visits jobs with up to workers goroutines, the last pushed
// first (a walk so stays deep, not wide, and holds few folders open);
// each visit may push more. visit is called with the worker's number,
// 0 to workers-1, for scratch space of its own. It ends at the first
// error, which it returns with the jobs it never visited, for the
// caller to release what they hold.
func lifoWork[J any](workers int, first []J, visit func(j J, worker int) ([]J, error)) (left []J, err error) {
	var (
		mu    sync.Mutex
		cond  = sync.NewCond(&mu)
		stack = first
		busy  int // jobs being visited, which may push more
	)
	var wg sync.WaitGroup
	for w := range max(workers, 1) {
		wg.Go(func() {
			for {
				mu.Lock()
				for len(stack) == 0 && busy > 0 && err == nil {
					cond.Wait()
				}
				if err != nil || len(stack) == 0 {
					mu.Unlock()
					cond.Broadcast()
					return
				}
				j := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				busy++
				mu.Unlock()

				more, verr := visit(j, w)

				mu.Lock()
				busy--
				if verr != nil && err == nil {
					err = verr
				}
				stack = append(stack, more...)
				mu.Unlock()
				cond.Broadcast()
			}
		})
	}
	wg.Wait()
	return stack, err
}
