//go:build linux

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/docjobs/docjobs/internal/logtest"
)

// openPTY opens a pseudo-terminal: the test types on its main side, the
// command reads its other side as a user's terminal.
func openPTY(t *testing.T) (main, term *os.File) {
	t.Helper()
	main, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { main.Close() })
	// Through SyscallConn, not Fd, which would take main out of the
	// poller and so make its read deadline useless.
	raw, err := main.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) {
		if ioctlErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioctlErr == nil {
			n, ioctlErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	}); err != nil || ioctlErr != nil {
		t.Fatalf("unlock the pseudo-terminal: %v %v", err, ioctlErr)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return main, term
}

// From a terminal, revoke --key-stdin asks for the key on stderr and reads
// one line with the terminal's echo off: the key typed does not show, and
// Enter ends the input (reading to the end of stdin showed the key and
// then waited for a Ctrl-D). The terminal's settings are put back.
func TestRevokeKeyStdinFromATerminalPromptsAndDoesNotEcho(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t)}
	key, id := createKey(t, env, "acme")
	main, term := openPTY(t)
	before, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}

	var out, errb logtest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runWithInput(context.Background(), []string{"apikey", "revoke", "--key-stdin"}, term, &out, &errb,
			func(k string) string { return env[k] })
	}()
	// Typed once the prompt is up, as a user would (what is typed before
	// is echoed by the terminal with its settings of then).
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(errb.String(), "the key to revoke"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			// The old reading: no prompt. Type anyway, to show the rest.
			t.Error("no prompt on stderr")
			break
		}
	}
	if _, err := main.Write([]byte(key + "\r")); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != ExitOK || out.String() != "revoked key "+id+" of account acme\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", c, out.String(), errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Error("Enter did not end the input: the command still waits")
		main.Write([]byte{4, 4}) // Ctrl-D, so that the command ends
		<-code
	}
	if err := main.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var shown bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := main.Read(buf)
		shown.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if strings.Contains(shown.String(), key) {
		t.Errorf("the terminal showed the key as it was typed")
	}
	if strings.Contains(out.String()+errb.String(), key) {
		t.Error("the command printed the key")
	}
	after, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag {
		t.Errorf("terminal settings after: lflag %#x iflag %#x, want them back as %#x %#x", after.Lflag, after.Iflag, before.Lflag, before.Iflag)
	}
}
