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

// CSVMarkdown renders delimited text (comma is the delimiter: '\t' for TSV,
// SniffDelimiter's pick for CSV) as
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

// Delimiter sniffing bounds: the records and bytes looked at.
const (
	sniffRecords = 20
	sniffBytes   = 64 << 10
)

// sniffDelimiters are the candidates, in order of preference on a tie.
var sniffDelimiters = [...]rune{',', ';', '\t', '|'}

// SniffDelimiter picks the delimiter of a .csv from its first records:
// spreadsheets in locales with a decimal comma (German, French, …) export
// "CSV" separated by semicolons, which split at commas cuts "1.234,56"
// in two. Each candidate reads the sample with quotes respected; the one
// under which most records have the same field count, more than one,
// wins (a larger count, then the order above, breaks a tie). Text that
// splits under none is one column, and comma is as good as any.
func SniffDelimiter(text string) rune {
	sample := text
	if len(sample) > sniffBytes {
		// Cut at a line end so that the last record is whole.
		sample = sample[:sniffBytes]
		if i := strings.LastIndexByte(sample, '\n'); i > 0 {
			sample = sample[:i]
		}
	}
	best, bestShare, bestFields := ',', 0.0, 0
	for _, d := range sniffDelimiters {
		share, fields := fieldConsistency(sample, d)
		if fields < 2 {
			continue
		}
		if share > bestShare || (share == bestShare && fields > bestFields) {
			best, bestShare, bestFields = d, share, fields
		}
	}
	return best
}

// fieldConsistency reads up to sniffRecords non-empty records of sample
// split at comma and returns the most common field count and the share of
// records that have it.
func fieldConsistency(sample string, comma rune) (share float64, fields int) {
	r := csv.NewReader(strings.NewReader(sample))
	r.Comma = comma
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	counts := map[int]int{}
	n := 0
	for n < sniffRecords {
		rec, err := r.Read()
		if err != nil {
			break // io.EOF, or text this delimiter cannot read
		}
		if rowEmpty(rec) {
			continue
		}
		n++
		counts[len(rec)]++
	}
	if n == 0 {
		return 0, 0
	}
	top := 0
	for f, c := range counts {
		if c > top || (c == top && f > fields) {
			fields, top = f, c
		}
	}
	return float64(top) / float64(n), fields
}
