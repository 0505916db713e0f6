package cli

import (
	"runtime"
	"strconv"
)

// widenProcs gives the server commands twice the Go processors
// (GOMAXPROCS) the runtime would pick, unless the GOMAXPROCS variable
// chooses: read as the runtime reads it, so a value it ignores ("abc",
// "0", "-1") leaves the doubling on, as no variable does. A job's start
// and end are bursts of short, latency-bound steps (downloads,
// statements, provider requests) on two cores: with as many Ps
// as cores, both were usually busy, and a goroutine whose network answer had
// come waited for one to look at the network poller (a local download took
// 2.4 ms to answer). With spare Ps, an idle one waits in the poller and the
// kernel shares the cores: `docjobs bench` went from 1.11–1.12 to 1.08–1.09
// of the critical path on SQLite (docs/benchmarks.md, docs/decisions.md).
// It returns the processors now in use.
func widenProcs(getenv func(string) string) int {
	if n, err := strconv.ParseInt(getenv("GOMAXPROCS"), 10, 32); err == nil && n > 0 {
		return runtime.GOMAXPROCS(0)
	}
	// From the runtime's default, not the current value, so that a second
	// call does not double it again.
	runtime.SetDefaultGOMAXPROCS()
	n := 2 * runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(n)
	return n
}
