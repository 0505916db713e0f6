//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f is a terminal: its settings can be read.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// readTerminalLine reads one line from the terminal f with echo off, after
// writing prompt to w, and puts the terminal's settings back. Reading to
// the end of stdin, as from a pipe, would show the key as it is typed and
// then wait for a Ctrl-D nobody knows to give. ctx ending (Ctrl-C, which
// the terminal still turns into a signal) stops the wait with the settings
// put back; the read itself stays blocked until the process exits.
func readTerminalLine(ctx context.Context, f *os.File, w io.Writer, prompt string) ([]byte, error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, fmt.Errorf("--key-stdin: read the terminal's settings: %w", err)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	quiet.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return nil, fmt.Errorf("--key-stdin: turn the terminal's echo off: %w", err)
	}
	// Put back however the read ends; a failure here has no better remedy.
	defer func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }()
	fmt.Fprint(w, prompt)
	type read struct {
		line []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		line, err := readLine(f)
		done <- read{line, err}
	}()
	select {
	case r := <-done:
		fmt.Fprintln(w) // the Enter was not echoed either
		return r.line, r.err
	case <-ctx.Done():
		fmt.Fprintln(w)
		return nil, ctx.Err()
	}
}

// readLine reads up to a line break, the end of input (Ctrl-D) or more
// than maxKeyBytes. A terminal in canonical mode hands over a line per
// read.
func readLine(r io.Reader) ([]byte, error) {
	var line []byte
	buf := make([]byte, 512)
	for len(line) <= maxKeyBytes {
		n, err := r.Read(buf)
		line = append(line, buf[:n]...)
		for i, b := range line {
			if b == '\n' {
				return line[:i+1], nil
			}
		}
		if err == io.EOF || (n == 0 && err == nil) {
			return line, nil
		}
		if err != nil {
			return nil, fmt.Errorf("--key-stdin: read the key: %w", err)
		}
	}
	return line, nil
}
