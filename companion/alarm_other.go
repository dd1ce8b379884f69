//go:build !linux

package companion

// newAlarm returns an alarm on a runtime timer.
func newAlarm(f func()) alarm { return newRuntimeAlarm(f) }
