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
// exports do, so any text reads as rows. A row that could never be kept,
// with more delimiters than Config.MaxCells or more text than the output
// may still hold, is not read to its end (see recordGuard): it and the
// rows after it are left out, with a note saying so.
func CSVMarkdown(ctx context.Context, cfg Config, text string, comma rune) (string, error) {
	cfg = cfg.withDefaults()
	guard := &recordGuard{text: text, sep: string(comma), maxSeps: cfg.MaxCells + csvReadAhead}
	r := csv.NewReader(guard)
	r.Comma = comma
	r.LazyQuotes = true
	r.FieldsPerRecord = -1
	r.ReuseRecord = false

	var (
		table       [][]string
		grown       paddedTable // what table renders, for the budgets
		rowNo, kept int
		cut         bool
		stop        error // why a row was given up on unread (recordGuard)
	)
	for {
		// Past a cut rows are only counted; one that alone passes the
		// output limit is not read whole for that.
		room := cfg.MaxOutputBytes
		if !cut {
			room -= grown.size()
		}
		guard.next(r.InputOffset(), room)
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTooManyFields) || errors.Is(err, errRecordTooLong) {
			stop = err
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
		// Every row is padded to the table's width (paddedTable).
		next := grown.with(rec)
		if len(table) >= cfg.MaxRows || next.cells() > cfg.MaxCells || next.size() > cfg.MaxOutputBytes {
			cut = true
			continue
		}
		grown = next
		table = append(table, rec)
		kept = rowNo
	}
	out := sheetTable(table)
	note := ""
	switch omitted := rowNo - kept; {
	// The rows after one given up on were not read, so not counted.
	case stop == errTooManyFields:
		note = fmt.Sprintf("… rows %d and after omitted: row %d has more than %d cells", kept+1, rowNo+1, cfg.MaxCells)
	case stop == errRecordTooLong:
		note = fmt.Sprintf("… rows %d and after omitted: row %d does not fit in the %s output limit", kept+1, rowNo+1, sizeString(cfg.MaxOutputBytes))
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

// Errors that stop a csv.Reader inside a record (see recordGuard).
var (
	errTooManyFields = errors.New("a record has more fields than the cell limit")
	errRecordTooLong = errors.New("a record has more text than the output may still hold")
)

// recordGuard feeds text to a csv.Reader and stops it inside a record
// that could never be kept. encoding/csv reads a whole record before
// returning it, and keeps some 40 bytes a field besides its text
// (offsets, positions, string headers) and its text two or three times
// over (the line, the unquoted fields, their strings). A record of
// nothing but delimiters cost 90 times its size: 100 MiB of commas, a
// file the download limit admits, took 8.9 GiB and 30 s, only to be
// dropped as a row over Config.MaxCells; one field of 100 MiB took
// 700 MiB, 2.1 GiB as 300 MiB of decoded text, only to be dropped as
// over Config.MaxOutputBytes.
//
// The reader is stopped with errTooManyFields once the record holds
// more than maxSeps delimiters, and with errRecordTooLong once its
// bytes other than delimiters, quotes, CRs and the blank lines before it
// (which the reader skips) pass room: a field's text is its bytes less
// the quotes around it, the second of each doubled quote and the CR of a
// quoted CR LF, so such a record has more text than room, and costs more
// (see CSVMarkdown). Both counts
// include the reader's look-ahead past the record, which they cannot
// tell from the record itself, so both bounds carry csvReadAhead more;
// delimiters inside quotes count as delimiters (a record holding a
// million quoted commas is also given up on, which no export has).
type recordGuard struct {
	text    string
	sep     string
	maxSeps int
	room    int64 // bytes of text the record may have, plus csvReadAhead
	pos     int   // bytes handed to the reader
	start   int   // where the record being read starts
	seps    int   // delimiters in text[start:pos]
	other   int   // quotes, CRs and leading LFs in text[start:pos]
	leading bool  // no byte but CR and LF since start
}

// next is called before each record with the reader's InputOffset, the
// end of the record before, and the text the record may have.
func (g *recordGuard) next(offset, room int64) {
	g.start, g.room = int(offset), room+csvReadAhead
	g.seps, g.other, g.leading = 0, 0, true
	g.count(g.text[g.start:g.pos])
}

func (g *recordGuard) count(s string) {
	g.seps += strings.Count(s, g.sep)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\r', c == '\n' && g.leading:
			g.other++
		case c == '"':
			g.other++
			g.leading = false
		default:
			g.leading = false
		}
	}
}

func (g *recordGuard) Read(p []byte) (int, error) {
	if g.pos >= len(g.text) {
		return 0, io.EOF
	}
	if g.seps > g.maxSeps {
		return 0, errTooManyFields
	}
	if int64(g.pos-g.start-g.other-g.seps*len(g.sep)) > g.room {
		return 0, errRecordTooLong
	}
	n := copy(p, g.text[g.pos:])
	g.count(g.text[g.pos : g.pos+n])
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
