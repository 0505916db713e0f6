package cli

import (
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/docjobs/docjobs/internal/config"
)

// serveVariables are the environment variables config.Load reads, the
// slots' base URLs named once as DOCJOBS_PROVIDER_<N>_BASE_URL (Load asks
// for every number, to refuse the ones that are no slot).
func serveVariables(t *testing.T) []string {
	t.Helper()
	slot := regexp.MustCompile(`^DOCJOBS_PROVIDER_\d+_BASE_URL$`)
	seen := map[string]bool{}
	if _, err := config.Load(func(name string) string {
		if slot.MatchString(name) {
			name = "DOCJOBS_PROVIDER_<N>_BASE_URL"
		}
		seen[name] = true
		return ""
	}); err != nil {
		t.Fatalf("the defaults do not load: %v", err)
	}
	var names []string
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestEveryVariableServeReadsIsDocumented: serve --help named 4 of the 34
// variables serve reads (those its flags set), so an operator asking the
// binary how to point it at PostgreSQL or S3 learnt nothing. Each one is
// named in serve --help and has its row in the README's table.
func TestEveryVariableServeReadsIsDocumented(t *testing.T) {
	code, help, stderr := run(t, nil, "serve", "--help")
	if code != ExitOK {
		t.Fatalf("serve --help: exit %d: %s", code, stderr)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names := serveVariables(t)
	if len(names) < 30 {
		t.Fatalf("config.Load read only %v: the recording getenv missed it", names)
	}
	for _, name := range names {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` `).MatchString(help) {
			t.Errorf("serve --help does not list %s", name)
		}
		if !strings.Contains(string(readme), "| `"+name+"` |") {
			t.Errorf("README.md's configuration table has no row for %s", name)
		}
	}
}

// TestServeHelpStatesTheDefaultsLoadApplies: a default serve --help gives
// as a plain value, set as that variable, loads the same configuration as
// leaving it unset; a default that drifted from config.Load's shows.
func TestServeHelpStatesTheDefaultsLoadApplies(t *testing.T) {
	_, help, _ := run(t, nil, "serve", "--help")
	unset, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^  (DOCJOBS_[A-Z_]+) +(\S+)`)
	checked := 0
	for _, m := range line.FindAllStringSubmatch(help, -1) {
		name, value := m[1], strings.TrimRight(m[2], ",;")
		if strings.ContainsAny(value, "$<…") || value == "none" || value == "the" {
			continue // not a literal: derived from another variable or the host
		}
		set, err := config.Load(func(n string) string {
			if n == name {
				return value
			}
			return ""
		})
		if err != nil {
			t.Errorf("%s=%s, the default serve --help states, is refused: %v", name, value, err)
			continue
		}
		// Given or not is recorded apart from the value; only values count.
		set.AddrSet, set.PublicURLSet = unset.AddrSet, unset.PublicURLSet
		if !reflect.DeepEqual(set, unset) {
			t.Errorf("%s=%s, the default serve --help states, loads another configuration than leaving it unset", name, value)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d defaults were checked; serve --help lists the variables as `  NAME  default`", checked)
	}
}

// TestEveryCommandSaysWhatItDoes: docjobs --help said only "Document
// recognition and extraction jobs", not which commands are the service's
// and which a client's, nor where serve's configuration is listed.
func TestEveryCommandSaysWhatItDoes(t *testing.T) {
	_, help, _ := run(t, nil, "--help")
	for _, want := range []string{"serve runs it", "serve --help lists the configuration variables", "submit, jobs, get and files", "DOCJOBS_URL"} {
		if !strings.Contains(help, want) {
			t.Errorf("docjobs --help lacks %q:\n%s", want, help)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" {
			t.Errorf("%q has no one-line description in its parent's help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(&environment{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}))
}
