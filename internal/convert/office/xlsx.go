package office

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
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
	a, err := openArchive(data, "XLSX", cfg)
	if err != nil {
		return "", err
	}
	defer func() {
		// excelize is a large parser of untrusted input; a panic in it
		// must fail this file, not the worker.
		if p := recover(); p != nil {
			md, err = "", invalidError("XLSX", nil, "it cannot be parsed (%v)", p)
		}
	}()
	tmp, err := cfg.tempDir(ctx)
	if err != nil {
		return "", err
	}
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit:    cfg.MaxInflatedBytes,
		UnzipXMLSizeLimit: min(cfg.MaxInflatedBytes, xmlPartInMemory),
		TmpDir:            tmp,
		// Built-in formats 14 and 22 are "the system's short date": the
		// file says mm-dd-yy, which reads 01-02-24 (which day? which
		// century?). ISO dates are unambiguous to people and models.
		ShortDatePattern: "yyyy-mm-dd",
	})
	if err != nil {
		return "", invalidError("XLSX", err, "the workbook cannot be opened")
	}
	defer f.Close()

	x := &xlsxWriter{ctx: ctx, f: f, a: a, maxRows: cfg.MaxRows, maxCells: cfg.MaxCells, maxBytes: cfg.MaxOutputBytes}
	x.parts = sheetParts(a)
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
	a        *archive
	parts    map[string]string // sheet name → worksheet part
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
	// A hidden (or veryHidden) sheet is output like the others, since its
	// cells are part of the file; the mark lets a reader tell what Excel
	// would not have shown.
	if visible, err := x.f.GetSheetVisible(name); err == nil && !visible {
		head += " (hidden)"
	}
	x.bytes += int64(len(head))
	formulas, err := uncachedFormulas(x.a, x.parts[name], x.maxRows, x.maxCells)
	if err != nil {
		return "", err
	}
	rows, err := x.f.Rows(name)
	if err != nil {
		// Chart sheets and dialog sheets have no cells.
		return head, nil
	}
	defer rows.Close()
	var table [][]string
	rowNo, lastKept := 0, 0
	cut := false
	cellsBefore, bytesBefore := x.cells, x.bytes
	var grown paddedTable
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
		for col, formula := range formulas[rowNo] {
			for len(cols) < col {
				cols = append(cols, "")
			}
			if cols[col-1] == "" {
				cols[col-1] = "=" + formula
			}
		}
		if rowEmpty(cols) {
			continue
		}
		next := grown.with(cols)
		if cellsBefore+next.cells() > x.maxCells || bytesBefore+next.size() > x.maxBytes {
			cut = true
			break
		}
		grown = next
		x.cells, x.bytes = cellsBefore+grown.cells(), bytesBefore+grown.size()
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

// paddedTable is what sheetTable will make of the rows so far, for the
// budgets: it renders them lead..end wide, every row padded to that width,
// so a table costs its rows times that width, not the cells each row
// holds. One value far to the right (column XFD of a sheet, a CSV row of
// 10,000 commas) pads every row: charged by their own cells, a 16 KB CSV
// made 90 MB of markdown, past both limits, and a 20 KB workbook 98 MB.
type paddedTable struct {
	rows, lead, end int
	text            int64 // bytes of the rows' cells
}

// with is the table with one more row.
func (t paddedTable) with(row []string) paddedTable {
	t.rows++
	if t.rows == 1 {
		t.lead = -1
	}
	for j, c := range row {
		t.text += int64(len(c))
		if strings.TrimSpace(c) != "" {
			if t.lead < 0 || j < t.lead {
				t.lead = j
			}
			t.end = max(t.end, j+1)
		}
	}
	return t
}

func (t paddedTable) width() int {
	if t.lead < 0 {
		return 0
	}
	return t.end - t.lead
}

// cells is the number of cells the table renders.
func (t paddedTable) cells() int { return t.rows * t.width() }

// size is about the bytes of its markdown: a cell costs its text and its
// delimiters, the header's delimiter row a cell's delimiters per column.
func (t paddedTable) size() int64 { return t.text + int64(3*t.cells()+6*t.width()) }

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

// sheetParts maps each sheet name of the workbook to its worksheet part,
// from workbook.xml and its relationships. It is best effort: excelize has
// read the same parts already, and a sheet missing here only loses its
// uncached formulas.
func sheetParts(a *archive) map[string]string {
	parts := map[string]string{}
	main, err := a.mainPart()
	if err != nil {
		return parts
	}
	rels, _, err := a.rels(main)
	if err != nil {
		return parts
	}
	rc, err := a.open(main)
	if err != nil {
		return parts
	}
	defer rc.Close()
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.RawToken()
		if err != nil {
			return parts
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "sheet" {
			continue
		}
		if rl, ok := rels[relAttrRaw(se, "id")]; ok && !rl.External {
			parts[attr(se, "name")] = rl.Target
		}
	}
}

// relAttrRaw is relAttr for a token read with RawToken, whose attribute
// names keep their prefix (r:id) instead of a namespace URL.
func relAttrRaw(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local && a.Name.Space != "" {
			return a.Value
		}
	}
	return ""
}

// uncachedFormulas finds the formula cells of a worksheet part that carry
// no cached value, by row and then column (1-based). Files written by
// generators that do not calculate (openpyxl, many exporters) have only
// the formula, which excelize reads as an empty cell; the formula text
// ("=B8*10") says more than nothing. Shared-formula cells that hold no
// text of their own stay empty. Like the table, the pass ends after
// maxRows rows with content, and it keeps at most maxFormulas formulas.
func uncachedFormulas(a *archive, part string, maxRows, maxFormulas int) (map[int]map[int]string, error) {
	found := map[int]map[int]string{}
	if part == "" {
		return found, nil
	}
	rc, err := a.open(part)
	if err != nil {
		return found, nil // excelize has read the sheet; nothing to add
	}
	defer rc.Close()
	dec := newXMLDecoder(rc)
	var (
		row, col, n   int
		rowsWithText  int
		in            string // the cell child being read: "f", "v", "is" or ""
		formula       strings.Builder
		hasValue      bool
		inCell, inRow bool
		rowHasText    bool
	)
	for n < maxFormulas && rowsWithText <= maxRows {
		tok, err := dec.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, a.readErr(part, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "row":
				row, col, inRow, rowHasText = row+1, 0, true, false
				if r, err := strconv.Atoi(attr(t, "r")); err == nil && r > 0 {
					row = r
				}
			case "c":
				if !inRow {
					continue
				}
				inCell, hasValue, in = true, false, ""
				formula.Reset()
				col++
				if ref := attr(t, "r"); ref != "" {
					if c, r, err := excelize.CellNameToCoordinates(ref); err == nil {
						col, row = c, r
					}
				}
			case "f", "v", "is":
				if inCell {
					in = t.Name.Local
					// An empty <v></v> is a cached value too: the empty
					// string of =IF(A5="","",…), as Excel writes it.
					hasValue = hasValue || in != "f"
				}
			}
		case xml.CharData:
			switch in {
			case "f":
				if formula.Len() < maxFormulaLen {
					formula.Write(t)
				}
			case "v", "is":
				if len(bytes.TrimSpace(t)) > 0 {
					rowHasText = true
				}
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "f", "v", "is":
				in = ""
			case "c":
				if inCell && !hasValue {
					if f := strings.TrimSpace(formula.String()); f != "" {
						if found[row] == nil {
							found[row] = map[int]string{}
						}
						found[row][col] = f
						n++
						rowHasText = true
					}
				}
				inCell = false
			case "row":
				inRow = false
				if rowHasText {
					rowsWithText++
				}
			case "sheetData":
				return found, nil
			}
		}
	}
	return found, nil
}

// maxFormulaLen bounds the text kept of one formula; Excel's own limit is
// 8192 characters.
const maxFormulaLen = 8192
