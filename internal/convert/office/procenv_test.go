package office

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// LibreOffice gets what it needs to find programs, fonts and the locale,
// and a TMPDIR of its own; nothing else of the service's environment.
func TestSofficeEnvKeepsOnlyWhatLibreOfficeNeeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		service map[string]string
		want    []string
	}{
		{
			name: "secrets and the system TMPDIR stay behind",
			service: map[string]string{
				"PATH": "/usr/bin", "HOME": "/home/docjobs", "LANG": "de_DE.UTF-8",
				"DOCJOBS_API_KEYS": "acct:sk-live", "DOCJOBS_DATABASE_URL": "postgres://u:pw@db/docjobs",
				"AWS_SECRET_ACCESS_KEY": "aws-secret", "AWS_ACCESS_KEY_ID": "AKIA", "TMPDIR": "/tmp",
				"DOCJOBS_MASTER_KEY_FILE": "/etc/docjobs/master.json",
			},
			want: []string{"PATH=/usr/bin", "HOME=/home/docjobs", "LANG=de_DE.UTF-8", "TMPDIR=/data/tmp/n1/docjobs-office-1/tmp"},
		},
		{
			name:    "fontconfig passes",
			service: map[string]string{"FONTCONFIG_FILE": "/etc/fonts/fonts.conf", "XDG_CACHE_HOME": "/var/cache/docjobs"},
			want:    []string{"FONTCONFIG_FILE=/etc/fonts/fonts.conf", "XDG_CACHE_HOME=/var/cache/docjobs", "TMPDIR=/data/tmp/n1/docjobs-office-1/tmp"},
		},
		{
			name: "an empty environment still has the TMPDIR",
			want: []string{"TMPDIR=/data/tmp/n1/docjobs-office-1/tmp"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.service[k]; return v, ok }
			got := sofficeEnv(lookup, "/data/tmp/n1/docjobs-office-1/tmp")
			if !slices.Equal(got, tc.want) {
				t.Errorf("sofficeEnv = %q, want %q", got, tc.want)
			}
		})
	}
}

// The process docjobs starts as LibreOffice (a fake soffice on PATH that
// writes down what it was given: a test of how docjobs starts it, not of
// LibreOffice) sees no secret of the service and a TMPDIR inside the
// conversion's folder, which exists and goes with the conversion.
func TestLibreOfficeIsStartedWithAMinimalEnvironment(t *testing.T) {
	bin, own, system := t.TempDir(), t.TempDir(), t.TempDir()
	dump := filepath.Join(t.TempDir(), "env")
	script := `env > ` + shellQuote(dump) + `; echo "PWD_IS=$(pwd)" >> ` + shellQuote(dump) +
		`; test -d "$TMPDIR" && echo TMPDIR_EXISTS >> ` + shellQuote(dump) + `; exit 1`
	if err := os.WriteFile(filepath.Join(bin, "soffice"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("TMPDIR", system)
	t.Setenv("DOCJOBS_API_KEYS", "acct:sk-live-123")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-456")
	t.Setenv("DOCJOBS_DATABASE_URL", "postgres://u:pw@db/docjobs")
	cfg := Config{TempDir: func(context.Context) (string, error) { return own, nil }}
	if _, _, err := Markdown(context.Background(), cfg, DOC, readTestdata(t, "doc/test2.doc")); err == nil {
		t.Fatal("a LibreOffice that failed converted")
	}
	raw, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the fake soffice did not run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	for _, secret := range []string{"sk-live-123", "aws-secret-456", "pw@db", "DOCJOBS_", "AWS_"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("LibreOffice's environment holds %q:\n%s", secret, raw)
		}
	}
	var pwd, tmp string
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, "PWD_IS="); ok {
			pwd = v
		}
		if v, ok := strings.CutPrefix(l, "TMPDIR="); ok {
			tmp = v
		}
	}
	if filepath.Dir(pwd) != own || tmp != filepath.Join(pwd, "tmp") {
		t.Errorf("LibreOffice ran in %q with TMPDIR %q; want TMPDIR <folder>/tmp of a folder of %s", pwd, tmp, own)
	}
	if !slices.Contains(lines, "TMPDIR_EXISTS") {
		t.Errorf("LibreOffice's TMPDIR %s did not exist while it ran", tmp)
	}
	for _, d := range []string{own, system} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Errorf("left in %s: %v", d, left)
		}
	}
}
