package consensus

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// invoice writes an extraction answer of n line items, the shape consensus
// is for. vary(i) returns a suffix that makes item i's description differ
// from other runs; drop skips one item; reverse lists the items backwards.
func invoice(n int, vary func(i int) string, drop int, reverse bool) string {
	items := make([]string, 0, n)
	for i := range n {
		if i == drop {
			continue
		}
		items = append(items, fmt.Sprintf(
			`{"line":%d,"sku":"SKU-%05d","description":"Widget model %d, blue%s","quantity":%d,"unitPrice":%d.50,"total":%d.00,"currency":"EUR","tags":["hw","q%d"]}`,
			i+1, i*7, i, vary(i), 1+i%9, 10+i%40, (1+i%9)*(10+i%40), i%4))
	}
	if reverse {
		for l, r := 0, len(items)-1; l < r; l, r = l+1, r-1 {
			items[l], items[r] = items[r], items[l]
		}
	}
	return `{"invoice":"INV-2024-0042","date":"2024-03-01","seller":{"name":"ACME GmbH","vat":"DE123456789"},"items":[` +
		strings.Join(items, ",") + `],"grandTotal":12345.67}`
}

func same(int) string { return "" }

// table writes the same answer as invoice with its line items written as
// tuples (8 cells, in invoice's field order), as tables are often extracted.
func table(n int, vary func(i int) string) string {
	rows := make([]string, n)
	for i := range rows {
		rows[i] = fmt.Sprintf(`[%d,"SKU-%05d","Widget model %d, blue%s",%d,%d.50,%d.00,"EUR",["hw","q%d"]]`,
			i+1, i*7, i, vary(i), 1+i%9, 10+i%40, (1+i%9)*(10+i%40), i%4)
	}
	return `{"invoice":"INV-2024-0042","date":"2024-03-01","seller":{"name":"ACME GmbH","vat":"DE123456789"},"items":[` +
		strings.Join(rows, ",") + `],"grandTotal":12345.67}`
}

func BenchmarkVote(b *testing.B) {
	const n = 500
	few := func(run int) func(int) string {
		return func(i int) string {
			if i%100 == run {
				return " (run " + fmt.Sprint(run) + ")"
			}
			return ""
		}
	}
	every := func(run int) func(int) string {
		return func(int) string { return fmt.Sprintf(" r%d", run) }
	}
	cases := []struct {
		name string
		runs []Run
	}{
		{"3x500 identical", answers(invoice(n, same, -1, false), invoice(n, same, -1, false), invoice(n, same, -1, false))},
		{"3x500 reordered", answers(invoice(n, same, -1, false), invoice(n, same, -1, true), invoice(n, same, -1, false))},
		{"3x500 one dropped, a few fields differ", answers(invoice(n, same, -1, false), invoice(n, few(1), 250, false), invoice(n, few(2), -1, true))},
		{"3x500 one run differs in every record", answers(invoice(n, same, -1, false), invoice(n, same, -1, false), invoice(n, every(3), -1, false))},
		{"3x500 every run differs in every record", answers(invoice(n, every(1), -1, false), invoice(n, every(2), -1, false), invoice(n, every(3), -1, false))},
		{"5x500 every run differs in every record", answers(invoice(n, every(1), -1, false), invoice(n, every(2), -1, false),
			invoice(n, every(3), -1, false), invoice(n, every(4), -1, false), invoice(n, every(5), -1, false))},
		{"3x500 tuples, every run differs in every row", answers(table(n, every(1)), table(n, every(2)), table(n, every(3)))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			size := 0
			for _, r := range c.runs {
				size += len(r.Answer)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var res Result
			for b.Loop() {
				var err error
				if res, err = Vote(c.runs, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			if res.Degraded != "" {
				b.Fatalf("degraded: %s", res.Degraded)
			}
			b.ReportMetric(float64(len(res.Disagreements)+res.DisagreementsDropped), "disagreements")
		})
	}
}

// BenchmarkVoteOrder measures voting the order of the largest arrays the
// limits let through: five runs of the same 99,999 numbers, each run in an
// order of its own, so every pair of runs disagrees on about half of all
// pairs of elements.
func BenchmarkVoteOrder(b *testing.B) {
	const n = DefaultMaxNodes - 1
	rng := rand.New(rand.NewPCG(5, 6))
	runs := make([]Run, MaxRuns)
	for r := range runs {
		var sb strings.Builder
		sb.WriteByte('[')
		for i, p := range rng.Perm(n) {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(p))
		}
		sb.WriteByte(']')
		runs[r].Answer = sb.String()
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Vote(runs, Limits{})
		if err != nil || res.Degraded != "" {
			b.Fatal(err, res.Degraded)
		}
	}
}

// BenchmarkVoteMatchBudget measures the worst array matching: three runs of
// small objects that all resemble each other, so every pair is compared and
// kept. "largest within" is the biggest such array the default budget lets
// through; "twice over" shows what giving up costs.
func BenchmarkVoteMatchBudget(b *testing.B) {
	alike := func(n int) []Run {
		runs := make([]Run, 3)
		for r := range runs {
			parts := make([]string, n)
			for i := range parts {
				parts[i] = fmt.Sprintf(`{"a":1,"b":%d}`, r*n+i)
			}
			runs[r].Answer = "[" + strings.Join(parts, ",") + "]"
		}
		return runs
	}
	fits := func(n int) bool {
		res, err := Vote(alike(n), Limits{})
		return err == nil && res.Degraded == ""
	}
	lo, hi := 1, 4096 // fits(lo), !fits(hi)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"largest within", lo}, {"twice over", 2 * hi}} {
		b.Run(c.name, func(b *testing.B) {
			runs := alike(c.n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Vote(runs, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.n), "elements/run")
		})
	}
}
