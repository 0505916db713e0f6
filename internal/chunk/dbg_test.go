package chunk

import (
	"strings"
	"testing"
	"time"
)

func TestDbgSlow(t *testing.T) {
	c := counter(t)
	for _, n := range []int{1000, 4000, 16000} {
		for name, s := range map[string]string{"spaces": strings.Repeat(" ", n), "nl": strings.Repeat("\n", n), "mixed": strings.Repeat(" \n", n/2), "x": strings.Repeat("x", n), "amp": strings.Repeat("&", n), "digits": strings.Repeat("1", n)} {
			t0 := time.Now()
			c.Count(s)
			d1 := time.Since(t0)
			t0 = time.Now()
			for _, f := range []string{"plain", "html"} {
				if _, err := Split(s, f, 16, c); err != nil {
					t.Log(err)
				}
			}
			t.Logf("%s %d count %v split %v", name, n, d1, time.Since(t0))
		}
	}
}
