package merge

import (
	"fmt"
	"strings"
	"testing"
)

// benchChunks returns 100 chunks of 50 records each, consecutive chunks
// sharing 2 records, rendered by answer.
func benchChunks(answer func(ids []int) string, withText bool) ([]Chunk, int) {
	var cs []Chunk
	total := 0
	for c := range 100 {
		first := c * 48
		ids := make([]int, 50)
		for i := range ids {
			ids[i] = first + i
		}
		ch := Chunk{File: "f", Index: c, Content: answer(ids)}
		if withText && c > 0 {
			ch.Overlap = fmt.Sprintf("Line %d item-%d 1%04d.50\n\nLine %d item-%d 1%04d.50\n", first, first, first, first+1, first+1, first+1)
		}
		total += len(ch.Content)
		cs = append(cs, ch)
	}
	return cs, total
}

func jsonRecords(ids []int) string {
	rs := make([]string, len(ids))
	for i, id := range ids {
		rs[i] = fmt.Sprintf(`{"id":%d,"name":"item-%d","amount":1%04d.5,"tags":["a","b"],"note":null}`, id, id, id)
	}
	return `{"title":"Statement","records":[` + strings.Join(rs, ",") + `]}`
}

func benchMerge(b *testing.B, cs []Chunk, total int, opts Options) {
	b.Helper()
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		as, err := Merge(cs, opts)
		if err != nil || len(as) != 1 || as[0].DedupeRemovedTechnical != 99*2 {
			b.Fatalf("%v %+v", err, as)
		}
	}
}

func BenchmarkMergeJSON(b *testing.B) {
	cs, total := benchChunks(jsonRecords, false)
	benchMerge(b, cs, total, Options{HasSchema: true})
}

func BenchmarkMergeJSONDedupeBy(b *testing.B) {
	cs, total := benchChunks(jsonRecords, false)
	benchMerge(b, cs, total, Options{HasSchema: true, DedupeBy: []string{"id"}})
}

func BenchmarkMergeJSONGrounded(b *testing.B) {
	cs, total := benchChunks(jsonRecords, true)
	benchMerge(b, cs, total, Options{HasSchema: true, DedupeBy: []string{"id"}})
}

func markdownRecords(ids []int) string {
	var s strings.Builder
	s.WriteString("| id | name | amount |\n|---|---|---|\n")
	for _, id := range ids {
		fmt.Fprintf(&s, "| %d | item-%d | 1%04d.50 |\n", id, id, id)
	}
	return s.String()
}

func htmlRecords(ids []int) string {
	var s strings.Builder
	s.WriteString("<table><thead><tr><th>id</th><th>name</th></tr></thead><tbody>")
	for _, id := range ids {
		fmt.Fprintf(&s, "<tr><td>%d</td><td>item-%d</td></tr>", id, id)
	}
	s.WriteString("</tbody></table>")
	return s.String()
}

func xmlRecords(ids []int) string {
	var s strings.Builder
	s.WriteString("<records>\n")
	for _, id := range ids {
		fmt.Fprintf(&s, "  <record id=\"%d\"><name>item-%d</name></record>\n", id, id)
	}
	s.WriteString("</records>")
	return s.String()
}

// The markup benchmarks run without and with the overlap text (grounding).
func BenchmarkMergeMarkdown(b *testing.B) {
	for _, grounded := range []bool{false, true} {
		b.Run(fmt.Sprintf("grounded=%v", grounded), func(b *testing.B) {
			cs, total := benchChunks(markdownRecords, grounded)
			benchMerge(b, cs, total, Options{Format: FormatMarkdown})
		})
	}
}

func BenchmarkMergeHTML(b *testing.B) {
	for _, grounded := range []bool{false, true} {
		b.Run(fmt.Sprintf("grounded=%v", grounded), func(b *testing.B) {
			cs, total := benchChunks(htmlRecords, grounded)
			benchMerge(b, cs, total, Options{Format: FormatHTML})
		})
	}
}

func BenchmarkMergeXML(b *testing.B) {
	for _, grounded := range []bool{false, true} {
		b.Run(fmt.Sprintf("grounded=%v", grounded), func(b *testing.B) {
			cs, total := benchChunks(xmlRecords, grounded)
			benchMerge(b, cs, total, Options{Format: FormatXML})
		})
	}
}

// BenchmarkMergeJSONLargeAnswers merges 32 answers of 512 KiB of distinct
// records (16 MiB), the shape of a merge near its input limit: B/op is what
// the merge allocates for it, most of it the parsed answers and the merged
// content (docs/benchmarks.md, "merge memory", has the peak RSS at the
// limit).
func BenchmarkMergeJSONLargeAnswers(b *testing.B) {
	var cs []Chunk
	total, id := 0, 0
	for c := range 32 {
		var s strings.Builder
		s.WriteString(`{"items":[`)
		for first := true; s.Len() < 512<<10-200; first = false {
			if !first {
				s.WriteString(",")
			}
			fmt.Fprintf(&s, `{"id":"R%d","name":"customer number %d","qty":%d,"price":"%d.50"}`, id, id, id%7, id)
			id++
		}
		s.WriteString(`]}`)
		cs = append(cs, Chunk{File: "f", Index: c, Content: s.String()})
		total += s.Len()
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		as, err := Merge(cs, Options{HasSchema: true})
		if err != nil || len(as) != 1 || as[0].MergeIncomplete {
			b.Fatalf("%v %+v", err, as)
		}
	}
}
