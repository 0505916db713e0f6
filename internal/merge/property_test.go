package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/chunk"
)

// The property tests split real documents with the real chunker and
// answer each chunk the way an extraction model does: every record the
// chunk's text shows, in document order.

type record struct{ id, name, amount string }

func (r record) text() string { return fmt.Sprintf("%s %s $%s", r.id, r.name, r.amount) }

var recordPattern = regexp.MustCompile(`(R\d+) ([a-z]+ [a-z]+) \$([\d,]+\.\d\d)`)

var (
	nameWords  = strings.Fields("alpha bravo carbon delta ember fjord gamma harbor indigo jasper kestrel lumen")
	proseWords = strings.Fields("the terms below apply to every line item of this statement unless noted otherwise and remain valid")
)

// genRecords returns n records; with dups, some repeat an earlier one
// exactly, sometimes right after it.
func genRecords(rng *rand.Rand, n int, dups bool) []record {
	var rs []record
	for i := range n {
		if dups && len(rs) > 0 && rng.IntN(4) == 0 {
			rs = append(rs, rs[len(rs)-1-rng.IntN(min(len(rs), 3))])
			continue
		}
		cents := 100 + rng.IntN(500000)
		amount := strconv.Itoa(cents / 100)
		if len(amount) > 3 {
			amount = amount[:len(amount)-3] + "," + amount[len(amount)-3:]
		}
		rs = append(rs, record{
			id:     fmt.Sprintf("R%d", 100+i),
			name:   nameWords[rng.IntN(len(nameWords))] + " " + nameWords[rng.IntN(len(nameWords))],
			amount: fmt.Sprintf("%s.%02d", amount, cents%100),
		})
	}
	return rs
}

func prose(rng *rand.Rand) string {
	n := 4 + rng.IntN(8)
	w := make([]string, n)
	for i := range w {
		w[i] = proseWords[rng.IntN(len(proseWords))]
	}
	return strings.ToUpper(w[0][:1]) + strings.Join(w, " ")[1:] + "."
}

// buildDoc lays records out as paragraphs and tables, with record-less
// prose and headings between them.
func buildDoc(rng *rand.Rand, rs []record, format string) string {
	var b strings.Builder
	for i := 0; i < len(rs); {
		if rng.IntN(3) == 0 {
			switch format {
			case chunk.FormatHTML:
				fmt.Fprintf(&b, "<h2>Part %s</h2>\n<p>%s</p>\n", strings.Repeat("I", 1+rng.IntN(3)), prose(rng))
			case chunk.FormatMarkdown:
				fmt.Fprintf(&b, "## Notes\n\n%s\n\n", prose(rng))
			default:
				fmt.Fprintf(&b, "%s\n\n", prose(rng))
			}
		}
		if format != chunk.FormatPlain && rng.IntN(4) == 0 {
			n := min(len(rs)-i, 1+rng.IntN(12))
			if format == chunk.FormatHTML {
				b.WriteString("<table><thead><tr><th>line</th><th>state</th></tr></thead><tbody>\n")
				for _, r := range rs[i : i+n] {
					fmt.Fprintf(&b, "<tr><td>%s</td><td>booked</td></tr>\n", r.text())
				}
				b.WriteString("</tbody></table>\n")
			} else {
				b.WriteString("| line | state |\n|---|---|\n")
				for _, r := range rs[i : i+n] {
					fmt.Fprintf(&b, "| %s | booked |\n", r.text())
				}
				b.WriteString("\n")
			}
			i += n
			continue
		}
		if format == chunk.FormatHTML {
			fmt.Fprintf(&b, "<p>Line %s booked.</p>\n", rs[i].text())
		} else {
			fmt.Fprintf(&b, "Line %s booked.\n\n", rs[i].text())
		}
		i++
	}
	return b.String()
}

// extract answers a chunk like a model asked for every line item: the
// amount as a number, as models normalize it.
func extract(text string) []map[string]any {
	out := []map[string]any{}
	for _, m := range recordPattern.FindAllStringSubmatch(text, -1) {
		amount, _ := strconv.ParseFloat(strings.ReplaceAll(m[3], ",", ""), 64)
		out = append(out, map[string]any{"id": m[1], "name": m[2], "amount": json.Number(strconv.FormatFloat(amount, 'f', -1, 64))})
	}
	return out
}

// answerChunks splits doc and answers every chunk; it returns the merge
// input and how many records the overlap blocks repeat.
func answerChunks(t testing.TB, c *chunk.Counter, file, doc, format string, budget int, withText bool) ([]Chunk, int, bool) {
	t.Helper()
	parts, err := chunk.Split(doc, format, budget, c)
	if errors.Is(err, chunk.ErrBudgetTooSmall) {
		return nil, 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var cs []Chunk
	repeated := 0
	for _, p := range parts {
		body, _ := json.Marshal(map[string]any{"records": extract(p.Text)})
		mc := Chunk{File: file, Index: p.Index, Content: string(body), NoOverlap: p.Overlap == 0}
		overlap := p.Body()[:p.Overlap]
		if withText {
			mc.Overlap = overlap
		}
		repeated += len(recordPattern.FindAllString(overlap, -1))
		cs = append(cs, mc)
	}
	return cs, repeated, true
}

func mergedRecords(t testing.TB, a Answer) []record {
	t.Helper()
	var got struct {
		Records []struct {
			ID     string      `json:"id"`
			Name   string      `json:"name"`
			Amount json.Number `json:"amount"`
		} `json:"records"`
	}
	if err := json.Unmarshal([]byte(a.Content), &got); err != nil {
		t.Fatalf("merged content: %v", err)
	}
	var rs []record
	for _, r := range got.Records {
		rs = append(rs, record{id: r.ID, name: r.Name, amount: string(r.Amount)})
	}
	return rs
}

func wantRecords(rs []record) []record {
	out := make([]record, len(rs))
	for i, r := range rs {
		f, _ := strconv.ParseFloat(strings.ReplaceAll(r.amount, ",", ""), 64)
		out[i] = record{id: r.id, name: r.name, amount: strconv.FormatFloat(f, 'f', -1, 64)}
	}
	return out
}

func counterFor(t testing.TB) *chunk.Counter {
	t.Helper()
	c, err := chunk.NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPropertyEveryRecordOnce: whatever the budget and layout, merging the
// answers of an overlapping split gives every record exactly once, in
// order, and dedupeRemovedTechnical counts exactly the records the overlap
// blocks repeated. Distinct records need no overlap text; records that
// genuinely repeat (even across a record-less overlap block, or next to
// the overlap record) need it.
func TestPropertyEveryRecordOnce(t *testing.T) {
	c := counterFor(t)
	formats := []string{chunk.FormatMarkdown, chunk.FormatPlain, chunk.FormatHTML}
	trials := 300
	if testing.Short() {
		trials = 60
	}
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		dups := trial%2 == 1
		format := formats[trial%3]
		rs := genRecords(rng, 1+rng.IntN(80), dups)
		doc := buildDoc(rng, rs, format)
		budget := 90 + rng.IntN(700)
		cs, repeated, ok := answerChunks(t, c, "f", doc, format, budget, dups)
		if !ok {
			continue
		}
		a := mergeOne(t, Options{HasSchema: true}, cs)
		got, want := mergedRecords(t, a), wantRecords(rs)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d (%s, budget %d, %d chunks, dups %v): records differ\n got %v\nwant %v\n%s",
				trial, format, budget, len(cs), dups, got, want, doc)
		}
		if a.DedupeRemovedTechnical != repeated || a.DedupeRemovedContent != 0 {
			t.Fatalf("trial %d: removed technical %d content %d, want %d and 0", trial, a.DedupeRemovedTechnical, a.DedupeRemovedContent, repeated)
		}
	}
}

// The service's acceptance scenario: a 400-record document at budget 1000,
// scope FILE.
func TestFourHundredRecordsAtBudget1000(t *testing.T) {
	c := counterFor(t)
	rng := rand.New(rand.NewPCG(400, 1000))
	rs := genRecords(rng, 400, false)
	doc := buildDoc(rng, rs, chunk.FormatMarkdown)
	cs, repeated, ok := answerChunks(t, c, "https://x/files/doc.md", doc, chunk.FormatMarkdown, 1000, false)
	if !ok || len(cs) < 3 {
		t.Fatalf("split into %d chunks", len(cs))
	}
	a := mergeOne(t, Options{HasSchema: true}, cs)
	got := mergedRecords(t, a)
	seen := map[string]bool{}
	for _, r := range got {
		if seen[r.id] {
			t.Fatalf("record %s twice", r.id)
		}
		seen[r.id] = true
	}
	if len(got) != 400 || a.DedupeRemovedTechnical != repeated || repeated == 0 || a.MergeIncomplete {
		t.Fatalf("%d records, removed %d of %d repeated, incomplete %v", len(got), a.DedupeRemovedTechnical, repeated, a.MergeIncomplete)
	}
	if a.File != "https://x/files/doc.md" || a.Format != FormatJSON {
		t.Fatalf("file %q format %q", a.File, a.Format)
	}
}

// The service's other acceptance scenario: three files sharing ids, dedupeBy
// ["id"], scope JOB.
func TestThreeFilesSharingIDsAtScopeJob(t *testing.T) {
	files := [][]int{{1, 2, 3, 4}, {3, 4, 5}, {5, 6, 1}}
	var cs []Chunk
	for f, ids := range files {
		// Two chunks per file, the boundary record repeated.
		half := len(ids) / 2
		var a, b []string
		for _, id := range ids[:half+1] {
			a = append(a, fmt.Sprintf(`{"id":%d,"from":"file%d"}`, id, f))
		}
		for _, id := range ids[half:] {
			b = append(b, fmt.Sprintf(`{"id":%d,"from":"file%d"}`, id, f))
		}
		file := fmt.Sprintf("https://x/files/%d", f)
		cs = append(cs, Chunk{File: file, Index: 0, Content: "[" + strings.Join(a, ",") + "]"},
			Chunk{File: file, Index: 1, Content: "[" + strings.Join(b, ",") + "]"})
	}
	a := mergeOne(t, Options{Scope: ScopeJob, HasSchema: true, DedupeBy: []string{"id"}}, cs)
	var got []struct{ ID int }
	if err := json.Unmarshal([]byte(a.Content), &got); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if fmt.Sprint(ids) != "[1 2 3 4 5 6]" {
		t.Errorf("ids %v", ids)
	}
	if a.File != "" || a.DedupeRemovedContent != 4 || a.DedupeRemovedTechnical != 3 {
		t.Errorf("file %q, removed content %d technical %d", a.File, a.DedupeRemovedContent, a.DedupeRemovedTechnical)
	}
	// The shared records disagree on "from": reported, first file kept.
	if len(a.Conflicts) != 4 || a.Conflicts[0].Field != "0.from" || a.Conflicts[0].Sources[1].File != "https://x/files/2" {
		t.Errorf("conflicts %+v", a.Conflicts)
	}
}
