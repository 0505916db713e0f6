//go:build linux

package cli

import (
	"time"

	"golang.org/x/sys/unix"
)

// monotonicClock returns a function mapping a time.Time taken in this
// process to CLOCK_MONOTONIC nanoseconds, the clock `perf record -k
// CLOCK_MONOTONIC` stamps its samples with. Go's own readings of now are
// monotonic, so differences from one shared reading carry over exactly.
func monotonicClock() (func(time.Time) int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, false
	}
	base, at := ts.Nano(), time.Now()
	return func(t time.Time) int64 { return base + int64(t.Sub(at)) }, true
}
