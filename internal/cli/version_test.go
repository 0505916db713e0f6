package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// The README dates behaviours by release: the binary says which build it
// is, its commit and that commit's time (audit-readme F12).
func TestDescribeBuildNamesTheVersionCommitAndTime(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"a build from a checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124103000-47adf75c1d2e"},
			Settings: settings("vcs.revision", "47adf75c1d2e", "vcs.time", "2026-11-24T10:30:00Z", "vcs.modified", "false")},
			true, "v0.0.0-20261124103000-47adf75c1d2e (commit 47adf75c1d2e, 2026-11-24T10:30:00Z)"},
		{"uncommitted changes are said", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"},
			Settings: settings("vcs.revision", "abc", "vcs.time", "2026-11-24T10:30:00Z", "vcs.modified", "true")},
			true, "v1.2.0 (commit abc, 2026-11-24T10:30:00Z, with uncommitted changes)"},
		{"a build without version control", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			true, "(devel) (no commit recorded: built outside a git checkout, or with -buildvcs=false)"},
		{"no build information", nil, false, "(no build information)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeBuild(tt.bi, tt.ok); got != tt.want {
				t.Errorf("describeBuild = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVersionAndDashDashVersionPrintTheBuild(t *testing.T) {
	want := "docjobs " + buildVersion() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, stderr := run(t, map[string]string{}, args...)
		if code != ExitOK || out != want || !strings.HasPrefix(out, "docjobs ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", args, code, out, stderr, want)
		}
	}
}
