package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// versionCommand prints what buildVersion says. The README dates
// behaviours by release ("releases before 2026-11-24 …"): the commit time
// lets a user tell which side of such a date a binary is on.
func versionCommand(env *environment) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print this binary's version, commit and commit time (also docjobs --version)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(env.stdout, "docjobs "+buildVersion())
			return err
		},
	}
}

// buildVersion describes the running binary from the build information Go
// records in it.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return describeBuild(bi, ok)
}

// describeBuild says which build bi is: the module version (a tag, or the
// pseudo-version go build derives from the commit), then the commit, its
// time and whether the work tree had changes, as far as they were recorded.
func describeBuild(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(no build information)"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var parts []string
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, "commit "+rev)
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if settings["vcs.modified"] == "true" {
		parts = append(parts, "with uncommitted changes")
	}
	if len(parts) == 0 {
		return version + " (no commit recorded: built outside a git checkout, or with -buildvcs=false)"
	}
	return version + " (" + strings.Join(parts, ", ") + ")"
}
