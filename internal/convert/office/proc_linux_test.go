package office

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deathHelperEnv makes the test binary, started again by
// TestLibreOfficeDiesWithTheService, run one conversion with the fake
// soffice the variable names, and hang in it.
const deathHelperEnv = "DOCJOBS_TEST_SOFFICE_DEATH_HELPER"

func TestMain(m *testing.M) {
	if bin := os.Getenv(deathHelperEnv); bin != "" {
		data, err := os.ReadFile(filepath.Join("testdata", "corpus", "doc", "test2.doc"))
		if err != nil {
			os.Exit(3)
		}
		_, _, _ = Markdown(context.Background(), Config{Soffice: bin, Timeout: time.Hour}, DOC, data)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A docjobs killed with kill -9 takes the LibreOffice it started along
// (Pdeathsig), instead of leaving it running and writing into the
// conversion folder that the next start empties.
func TestLibreOfficeDiesWithTheService(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "soffice.pid")
	// The launcher itself stays (exec): the kernel's parent-death signal
	// reaches the process docjobs started.
	bin := fakeSoffice(t, `echo $$ > `+shellQuote(pidFile)+`.part && mv `+shellQuote(pidFile+".part")+` `+shellQuote(pidFile)+`; exec sleep 60`)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	service := exec.Command(self, "-test.run=^$")
	// Killed, the helper leaves its conversion folder behind (serve's
	// folder is emptied at its next start): in the test's, not in /tmp.
	service.Env = append(os.Environ(), deathHelperEnv+"="+bin, "TMPDIR="+t.TempDir())
	if err := service.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = service.Process.Kill(); _ = service.Wait() }()

	deadline := time.Now().Add(10 * time.Second)
	var pid int
	for {
		if raw, err := os.ReadFile(pidFile); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(raw))); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fake soffice never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := service.Process.Kill(); err != nil { // SIGKILL: no cleanup of ours runs
		t.Fatal(err)
	}
	_ = service.Wait()
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("LibreOffice (pid %d) still runs after docjobs was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
