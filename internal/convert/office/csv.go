package office

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
)

// ModelCSV is the method CSVMarkdown reports.
const ModelCSV = "csv"

// CSVMarkdown renders delimited text (comma ',' for CSV, '\t' for TSV) as
// one markdown table, its first row the header, within the bounds an XLSX
// sheet has: Config.MaxRows rows, Config.MaxCells cells and
// Config.MaxOutputBytes of markdown, with a note saying how many rows were
// cut. Quotes are read leniently (a stray quote is text, a quoted field
// left open runs to the end) and rows may differ in length, as spreadsheet
// exports do, so any text reads as rows.
func CSVMarkdown(ctx context.Context, cfg Config, text string, comma rune) (string, error) {
	cfg = cfg.withDefaults()
	r := csv.NewReader(strings.NewReader(text))
	r.Comma = comma
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	r.ReuseRecord = false

	var (
		table       [][]string
		cells       int
		size        int64
		rowNo, kept int
		cut         bool
	)
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", invalidError("CSV", err, "the rows cannot be read")
		}
		rowNo++
		if rowNo%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		if cut {
			continue // counted for the note, not kept
		}
		if rowEmpty(rec) {
			kept = rowNo
			continue
		}
		// A cell costs its text and its delimiters.
		cost := int64(3 * len(rec))
		for _, c := range rec {
			cost += int64(len(c))
		}
		if len(table) >= cfg.MaxRows || cells+len(rec) > cfg.MaxCells || size+cost > cfg.MaxOutputBytes {
			cut = true
			continue
		}
		cells += len(rec)
		size += cost
		table = append(table, rec)
		kept = rowNo
	}
	out := sheetTable(table)
	if omitted := rowNo - kept; cut && omitted > 0 {
		if out != "" {
			out += "\n\n"
		}
		out += fmt.Sprintf("… %d more rows omitted", omitted)
	}
	return out, nil
}
