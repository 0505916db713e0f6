package office

import (
	"context"
	"encoding/csv"
	"errors"
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
// exports do, so any text reads as rows. A row with more delimiters than
// Config.MaxCells is not read to its end (see fieldGuard): it and the rows
// after it are left out, with a note saying so.
func CSVMarkdown(ctx context.Context, cfg Config, text string, comma rune) (string, error) {
	cfg = cfg.withDefaults()
	guard := &fieldGuard{text: text, sep: string(comma), max: cfg.MaxCells + csvReadAhead}
	r := csv.NewReader(guard)
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
		wide        int // the row given up on for its delimiters, 0 for none
	)
	for {
		guard.next(r.InputOffset())
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTooManyFields) {
			wide = rowNo + 1
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
	note := ""
	switch omitted := rowNo - kept; {
	case wide > 0:
		// The rows after the wide one were not read, so not counted.
		note = fmt.Sprintf("… rows %d and after omitted: row %d has more than %d cells", kept+1, wide, cfg.MaxCells)
	case cut && omitted > 0:
		note = fmt.Sprintf("… %d more rows omitted", omitted)
	}
	if note != "" {
		if out != "" {
			out += "\n\n"
		}
		out += note
	}
	return out, nil
}

// csvReadAhead is how far encoding/csv reads past the record it returns:
// the size of the bufio.Reader it puts in front of its input (bufio's
// default, which csv.NewReader takes).
const csvReadAhead = 4096

// errTooManyFields stops a csv.Reader inside a record (see fieldGuard).
var errTooManyFields = errors.New("a record has more fields than the cell limit")

// fieldGuard feeds text to a csv.Reader and stops it, with
// errTooManyFields, once the record it is reading holds more than max
// delimiters. encoding/csv reads a whole record before returning it and
// keeps some 40 bytes a field besides its text (offsets, positions, the
// string headers), so a record of nothing but delimiters cost 90 times
// its size: 100 MiB of commas, a file the download limit admits, took
// 8.9 GiB and 30 s, only to be dropped as a row over Config.MaxCells. A
// record with more delimiters than that has more fields than a table may
// keep, and reading it is stopped within max of them. Delimiters inside
// quotes are counted too (a record holding a million quoted commas is
// also given up on), and max includes the reader's look-ahead past the
// record, which the count cannot tell from the record itself.
type fieldGuard struct {
	text  string
	sep   string
	max   int
	pos   int // bytes handed to the reader
	start int // where the record being read starts
	seps  int // delimiters in text[start:pos]
}

// next is called before each record with the reader's InputOffset, the
// end of the record before.
func (g *fieldGuard) next(offset int64) {
	g.start = int(offset)
	g.seps = strings.Count(g.text[g.start:g.pos], g.sep)
}

func (g *fieldGuard) Read(p []byte) (int, error) {
	if g.pos >= len(g.text) {
		return 0, io.EOF
	}
	if g.seps > g.max {
		return 0, errTooManyFields
	}
	n := copy(p, g.text[g.pos:])
	g.seps += strings.Count(g.text[g.pos:g.pos+n], g.sep)
	g.pos += n
	return n, nil
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
