//go:build unix

package chunk

import (
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// A text longer than maxText is refused, not split with offsets that
// overflow a unit's int32. The text is a mapping of zero pages that is
// never touched, so the test costs address space, not memory.
func TestSplitRefusesATextOverMaxText(t *testing.T) {
	mem, err := syscall.Mmap(-1, 0, maxText+1, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skipf("no address space for %d bytes: %v", maxText+1, err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	text := unsafe.String(&mem[0], len(mem))
	for _, format := range []string{FormatPlain, FormatMarkdown, FormatHTML, FormatXML} {
		_, err := SplitAtMost(text, format, 0, 1000, counter(t))
		if err == nil || !strings.Contains(err.Error(), "more than the 715827882 a split takes") {
			t.Errorf("%s: err = %v, want the text refused for its length", format, err)
		}
	}
}
