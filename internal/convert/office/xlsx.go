package office

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/xuri/excelize/v2"
)

// xmlPartInMemory is the size above which excelize spills a worksheet or
// the shared strings to a temporary file instead of holding it.
const xmlPartInMemory = 16 << 20

// xlsxMarkdown reads a workbook through excelize: one markdown table per
// sheet, cell values as their number formats show them.
func xlsxMarkdown(ctx context.Context, cfg Config, data []byte) (md string, err error) {
	// excelize trusts the sizes the zip headers declare; archive/zip
	// refuses to inflate past them, so checking the declarations against
	// our limits first bounds what excelize can inflate.
	if _, err := openArchive(data, "XLSX", cfg); err != nil {
		return "", err
	}
	defer func() {
		// excelize is a large parser of untrusted input; a panic in it
		// must fail this file, not the worker.
		if p := recover(); p != nil {
			md, err = "", invalidError("XLSX", nil, "it cannot be parsed (%v)", p)
		}
	}()
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit:    cfg.MaxInflatedBytes,
		UnzipXMLSizeLimit: min(cfg.MaxInflatedBytes, xmlPartInMemory),
		TmpDir:            os.TempDir(),
	})
	if err != nil {
		return "", invalidError("XLSX", err, "the workbook cannot be opened")
	}
	defer f.Close()

	x := &xlsxWriter{ctx: ctx, f: f, maxRows: cfg.MaxRows, maxCells: cfg.MaxCells, maxBytes: cfg.MaxOutputBytes}
	var sections []string
	for _, name := range f.GetSheetList() {
		if x.bytes >= x.maxBytes {
			sections = append(sections, fmt.Sprintf("… the rest of the workbook is omitted: its markdown exceeds the %s limit", sizeString(x.maxBytes)))
			break
		}
		s, err := x.sheet(name)
		if err != nil {
			return "", err
		}
		sections = append(sections, s)
	}
	return joinSections(sections), nil
}

type xlsxWriter struct {
	ctx      context.Context
	f        *excelize.File
	maxRows  int
	maxCells int
	cells    int // cells written, all sheets
	maxBytes int64
	bytes    int64 // markdown written, about, all sheets
}

// sheet renders one sheet: empty rows are dropped and the columns empty
// in every row to the left trimmed, so the first non-empty row is the header.
func (x *xlsxWriter) sheet(name string) (string, error) {
	head := "## Sheet: " + escapeText(collapseSpaces(name))
	x.bytes += int64(len(head))
	rows, err := x.f.Rows(name)
	if err != nil {
		// Chart sheets and dialog sheets have no cells.
		return head, nil
	}
	defer rows.Close()
	var table [][]string
	rowNo, lastKept := 0, 0
	cut := false
	for rows.Next() {
		rowNo++
		if rowNo%1024 == 0 {
			if err := x.ctx.Err(); err != nil {
				return "", err
			}
		}
		if len(table) >= x.maxRows {
			cut = true
			break
		}
		cols, err := rows.Columns()
		if err != nil {
			return "", invalidError("XLSX", err, "sheet %q cannot be read", name)
		}
		if rowEmpty(cols) {
			continue
		}
		// A cell costs its text and its delimiters.
		size := int64(3 * len(cols))
		for _, c := range cols {
			size += int64(len(c))
		}
		if x.cells+len(cols) > x.maxCells || x.bytes+size > x.maxBytes {
			cut = true
			break
		}
		x.cells += len(cols)
		x.bytes += size
		table = append(table, cols)
		lastKept = rowNo
	}
	omitted := 0
	if cut {
		// Count the rows after the cut by number, without reading their cells.
		last := rowNo
		for rows.Next() {
			last++
		}
		omitted = last - lastKept
	}
	if err := rows.Error(); err != nil {
		return "", invalidError("XLSX", err, "sheet %q cannot be read", name)
	}
	out := head
	if t := sheetTable(table); t != "" {
		out += "\n\n" + t
	}
	if omitted > 0 {
		out += fmt.Sprintf("\n\n… %d more rows omitted", omitted)
	}
	return out, nil
}

func rowEmpty(cols []string) bool {
	for _, c := range cols {
		if strings.TrimSpace(c) != "" {
			return false
		}
	}
	return true
}

// sheetTable trims the empty columns on the left and right and renders
// the rows as a pipe table.
func sheetTable(table [][]string) string {
	if len(table) == 0 {
		return ""
	}
	lead, width := -1, 0
	for _, row := range table {
		for j, c := range row {
			if strings.TrimSpace(c) != "" {
				if lead < 0 || j < lead {
					lead = j
				}
				width = max(width, j+1)
			}
		}
	}
	rows := make([][]string, len(table))
	for i, row := range table {
		row = row[min(lead, len(row)):min(width, len(row))]
		cells := make([]string, len(row))
		for j, c := range row {
			cells[j] = cellValue(c)
		}
		rows[i] = cells
	}
	return pipeTable(rows, width-lead)
}

// cellValue escapes a cell value for a pipe table; line breaks in the
// cell become <br>.
func cellValue(v string) string {
	v = strings.TrimSpace(strings.ReplaceAll(v, "\r\n", "\n"))
	lines := strings.Split(v, "\n")
	for i, l := range lines {
		lines[i] = escapePipes(escapeText(strings.TrimSpace(l)))
	}
	return strings.Join(lines, "<br>")
}
