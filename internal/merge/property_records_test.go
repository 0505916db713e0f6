package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/chunk"
)

// TestPropertyRecordsSpanningChunksKeepEveryLine (audit F1): invoices
// whose lines run over chunk boundaries, split by the real chunker and
// answered per chunk as a model would (each invoice the chunk shows, with
// the lines it shows), merge with dedupeBy ["number"] into each invoice
// once, with every line once and in order.
func TestPropertyRecordsSpanningChunksKeepEveryLine(t *testing.T) {
	c := counterFor(t)
	linePattern := regexp.MustCompile(`Line (L(\d+)-\d+) ([a-z]+ [a-z]+) \$(\d+\.\d\d)`)
	trials := 200
	if testing.Short() {
		trials = 40
	}
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 11))
		var doc strings.Builder
		var want []string // "number: line ids" per invoice
		for inv := range 1 + rng.IntN(8) {
			fmt.Fprintf(&doc, "## Invoice INV-%d\n\n%s\n\n", inv, prose(rng))
			var ids []string
			for l := range 1 + rng.IntN(25) {
				id := fmt.Sprintf("L%d-%d", inv, l)
				ids = append(ids, id)
				fmt.Fprintf(&doc, "Line %s %s %s $%d.%02d\n\n", id, nameWords[rng.IntN(len(nameWords))],
					nameWords[rng.IntN(len(nameWords))], 1+rng.IntN(900), rng.IntN(100))
			}
			want = append(want, fmt.Sprintf("INV-%d: %s", inv, strings.Join(ids, " ")))
		}
		budget := 60 + rng.IntN(400)
		parts, err := chunk.Split(doc.String(), chunk.FormatMarkdown, budget, c)
		if errors.Is(err, chunk.ErrBudgetTooSmall) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var cs []Chunk
		for _, p := range parts {
			type line struct {
				ID     string      `json:"id"`
				Item   string      `json:"item"`
				Amount json.Number `json:"amount"`
			}
			type invoice struct {
				Number string `json:"number"`
				Lines  []line `json:"lines"`
			}
			var invs []*invoice
			for _, m := range linePattern.FindAllStringSubmatch(p.Text, -1) {
				number := "INV-" + m[2]
				if len(invs) == 0 || invs[len(invs)-1].Number != number {
					invs = append(invs, &invoice{Number: number})
				}
				last := invs[len(invs)-1]
				last.Lines = append(last.Lines, line{ID: m[1], Item: m[3], Amount: json.Number(m[4])})
			}
			body, _ := json.Marshal(map[string]any{"invoices": invs})
			cs = append(cs, Chunk{File: "f", Index: p.Index, Content: string(body),
				NoOverlap: p.Overlap == 0, Overlap: p.Body()[:p.Overlap]})
		}
		a := mergeOne(t, Options{HasSchema: true, DedupeBy: []string{"number"}}, cs)
		var got struct {
			Invoices []struct {
				Number string
				Lines  []struct{ ID string }
			}
		}
		if err := json.Unmarshal([]byte(a.Content), &got); err != nil {
			t.Fatal(err)
		}
		var have []string
		for _, inv := range got.Invoices {
			var ids []string
			for _, l := range inv.Lines {
				ids = append(ids, l.ID)
			}
			have = append(have, fmt.Sprintf("%s: %s", inv.Number, strings.Join(ids, " ")))
		}
		if strings.Join(have, "\n") != strings.Join(want, "\n") {
			t.Fatalf("trial %d (budget %d, %d chunks): invoices differ\n got %s\nwant %s",
				trial, budget, len(cs), strings.Join(have, "\n     "), strings.Join(want, "\n     "))
		}
		if a.MergeIncomplete || len(a.Conflicts) > 0 {
			t.Fatalf("trial %d: incomplete %+v, conflicts %+v", trial, a.IncompleteChunks, a.Conflicts)
		}
	}
}
