package cli

import (
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
)

// The server commands run with twice the Go processors the runtime picks
// (docs/decisions.md "Twice the Go processors"); the client commands keep
// the runtime's choice, and a GOMAXPROCS variable wins over the doubling
// when the runtime reads it (a positive number), not otherwise.
func TestServerCommandsRunTwiceTheRuntimesProcessors(t *testing.T) {
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.SetDefaultGOMAXPROCS() })
	for _, tc := range []struct {
		name, args, gomaxprocs string
		want                   int
	}{
		{"a client command keeps the runtime's", "jobs --bogus", "", def},
		{"bench doubles it", "bench --jobs 0", "", 2 * def},
		{"serve doubles it", "serve --role nonsense", "", 2 * def},
		{"the variable wins", "serve --role nonsense", "3", def},
		{"a variable the runtime ignores does not stop the doubling", "serve --role nonsense", "abc", 2 * def},
		{"a zero variable, ignored by the runtime, does not stop the doubling", "bench --jobs 0", "0", 2 * def},
		{"a negative variable, ignored by the runtime, does not stop the doubling", "bench --jobs 0", "-2", 2 * def},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.SetDefaultGOMAXPROCS()
			getenv := func(k string) string {
				if k == "GOMAXPROCS" {
					return tc.gomaxprocs
				}
				return ""
			}
			code := Main(strings.Fields(tc.args), make(chan os.Signal), io.Discard, io.Discard, getenv, func(int) {})
			if code != ExitUsage {
				t.Fatalf("exit %d, want the usage error the test gives", code)
			}
			if got := runtime.GOMAXPROCS(0); got != tc.want {
				t.Errorf("GOMAXPROCS %d after %q, want %d (the runtime's %d)", got, tc.args, tc.want, def)
			}
		})
	}
	// A second start does not double it again.
	runtime.SetDefaultGOMAXPROCS()
	widenProcs(func(string) string { return "" })
	if got := widenProcs(func(string) string { return "" }); got != 2*def {
		t.Errorf("widened twice: %d, want %d", got, 2*def)
	}
}
