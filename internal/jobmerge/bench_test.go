package jobmerge

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
)

// benchURL is the one file of the benchmark jobs.
const benchURL = "https://x/a.pdf"

// limitRows fills the merge's input limit (InputBudget) with 1024 answers
// of 64 KiB, each made by answer from its chunk index.
func limitRows(answer func(chunk int) string) []job.LLMRow {
	const n = 1024
	rows := make([]job.LLMRow, n)
	for i := range rows {
		rows[i] = job.LLMRow{File: benchURL, ChunkIndex: i, ChunkTotal: n, Status: job.RowDone, Content: answer(i)}
	}
	return rows
}

// fill repeats item(k), k = 0, 1, …, between head and tail, separated by
// sep, up to size bytes.
func fill(size int, head, sep, tail string, item func(k int) string) string {
	var s strings.Builder
	s.Grow(size)
	s.WriteString(head)
	for k := 0; ; k++ {
		it := item(k)
		if s.Len()+len(sep)+len(it)+len(tail) > size {
			break
		}
		if k > 0 {
			s.WriteString(sep)
		}
		s.WriteString(it)
	}
	s.WriteString(tail)
	return s.String()
}

const answerSize = 64 << 10

// invoiceAnswer is an extraction answer: a header object and an array of
// line records, each with a nested array.
func invoiceAnswer(c int) string {
	head := fmt.Sprintf(`{"invoice":{"number":"INV-%06d","date":"2026-11-%02d","currency":"EUR","supplier":{"name":"Supplier %d GmbH","vat":"DE%09d"}},"lines":[`, c, c%28+1, c%5, c)
	return fill(answerSize, head, ",", `],"total":null}`, func(k int) string {
		id := c*1000 + k
		return fmt.Sprintf(`{"line":%d,"sku":"SKU-%07d","description":"Item %d, blue, size M","qty":%d,"unitPrice":%d.%02d,"amount":"%d.50","tags":["stock","eu"],"note":null}`,
			k+1, id, id, k%9+1, id%500, k%100, id%9000)
	})
}

const invoiceSchema = `{"type":"object","properties":{"invoice":{"type":"object"},"lines":{"type":"array","items":{"type":"object","required":["sku"]}}}}`

// The hostile shapes, each as small as JSON allows within an answer.
func tinyValuesAnswer(c int) string { // about 2 bytes a value
	return fill(answerSize, fmt.Sprintf(`[%d,`, c), ",", "]", func(k int) string { return string(rune('0' + k%10)) })
}

func deepAnswer(c int) string { // arrays nested 120 deep, about 2 bytes a value
	item := strings.Repeat("[", 120) + "0" + strings.Repeat("]", 120)
	return fill(answerSize, fmt.Sprintf(`[%d,`, c), ",", "]", func(int) string { return item })
}

func manyKeysAnswer(c int) string { // a distinct key per value: one merged node each
	return fill(answerSize, "{", ",", "}", func(k int) string { return fmt.Sprintf(`"%x.%x":0`, c, k) })
}

func longStringsAnswer(c int) string { // one string of escapes per answer, at one field
	return fill(answerSize, `{"text":"`, "", `"}`, func(k int) string { return `\u00e9\n` })
}

func xmlAnswer(c int) string { // an empty element per 4 bytes
	return fill(answerSize, fmt.Sprintf(`<r n="%d">`, c), "", "</r>", func(int) string { return "<a/>" })
}

func htmlAnswer(c int) string { // a paragraph per 8 bytes
	return fill(answerSize, fmt.Sprintf(`<div id="%d">`, c), "", "</div>", func(int) string { return "<p>x</p>" })
}

// peakHeap samples the heap's size every millisecond while it runs; the
// maximum is what the process must hold, garbage not yet swept included.
type peakHeap struct {
	max  atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func startPeakHeap() *peakHeap {
	runtime.GC()
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > p.max.Load() {
			p.max.Store(v)
		}
	}
	read()
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return p
}

func (p *peakHeap) end() uint64 {
	close(p.stop)
	<-p.done
	return p.max.Load()
}

// BenchmarkAnswersAtTheInputLimit merges 64 MiB of answers (the merge's
// input limit) of each shape through Answers, as finalize, a cancel and
// the deadline do, and reports the heap's peak while it runs, the input
// included ("peak-MiB"), and that peak over the input ("peak/input").
func BenchmarkAnswersAtTheInputLimit(b *testing.B) {
	cases := []struct {
		name   string
		answer func(int) string
		schema string
		format string
	}{
		{"invoices", invoiceAnswer, "", ""},
		{"invoices with a schema", invoiceAnswer, invoiceSchema, ""},
		{"tiny values", tinyValuesAnswer, "", ""},
		{"tiny values with a schema", tinyValuesAnswer, `{"type":"array","items":{"type":"integer"}}`, ""},
		{"deep nesting", deepAnswer, "", ""},
		{"many keys", manyKeysAnswer, "", ""},
		{"long strings", longStringsAnswer, "", ""},
		{"xml elements", xmlAnswer, "", "MERGE_FORMAT_XML"},
		{"html elements", htmlAnswer, "", "MERGE_FORMAT_HTML"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			rows := limitRows(tc.answer)
			input := 0
			for _, r := range rows {
				input += len(r.Content)
			}
			if input > InputBudget {
				b.Fatalf("input %d over the budget %d", input, InputBudget)
			}
			res := &job.Result{Job: &job.Job{SourceURLs: []string{benchURL}, Prompts: []string{"extract"},
				ResponseSchema: tc.schema, Merge: job.Merge{Enabled: true, Format: tc.format}}, LLM: rows}
			log := slog.New(slog.DiscardHandler)
			b.SetBytes(int64(input))
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				p := startPeakHeap()
				raw, err := Answers(res, log)
				peak = max(peak, p.end())
				if err != nil || len(raw) == 0 {
					b.Fatalf("%v: %.300s", err, raw)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(peak)/float64(input), "peak/input")
		})
	}
}

// BenchmarkSchemaValid judges merged content against the job's schema as
// Answers does (conforms), and reports the heap's peak while it runs, the
// content included ("peak-MiB"): 4 MB with a violation per element (1 where
// the schema wants strings), and 6 MB that conforms (hunt-consensus
// measured 646 and 113 MiB for the validator's full run).
func BenchmarkSchemaValid(b *testing.B) {
	const sch = `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}}`
	cases := []struct {
		name, content string
		valid         bool
	}{
		{"a violation per element", `{"items":[` + strings.Repeat("1,", 2<<20) + `1]}`, false},
		{"conforms", `{"items":[` + strings.Repeat(`"a",`, 3<<19) + `"a"]}`, true},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.content)))
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				p := startPeakHeap()
				v := conforms(sch, tc.content)
				peak = max(peak, p.end())
				if v == nil || *v != tc.valid {
					b.Fatalf("conforms = %v, want %v", v, tc.valid)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}
