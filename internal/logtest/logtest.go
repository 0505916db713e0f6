// Package logtest holds what tests need to read a process's log: a buffer
// the code under test may write while the test reads it, and its JSON lines.
package logtest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Buffer is a bytes.Buffer that is safe to write from the code under test
// and read from the test at the same time.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Records is the buffer's JSON log lines, each decoded.
func (s *Buffer) Records(t testing.TB) []map[string]any {
	t.Helper()
	return Records(t, s.String())
}

// Records decodes text's JSON log lines; a line that is not JSON fails t.
func Records(t testing.TB, text string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}
