package office

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// workbook builds an XLSX with excelize: fill gets the file and the name
// of its first sheet.
func workbook(t testing.TB, fill func(f *excelize.File, sheet string)) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	fill(f, "Sheet1")
	buf, err := f.WriteToBuffer()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func set(t testing.TB, f *excelize.File, sheet, cell string, v any) {
	t.Helper()
	if err := f.SetCellValue(sheet, cell, v); err != nil {
		t.Fatal(err)
	}
}

func TestXLSX(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		fill func(t *testing.T, f *excelize.File, s string)
		want string
	}{
		{
			name: "values read as their number formats show them",
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "A1", "Item")
				set(t, f, s, "B1", "Value")
				set(t, f, s, "A2", "integer")
				set(t, f, s, "B2", 196)
				set(t, f, s, "A3", "fraction")
				set(t, f, s, "B3", 1.5)
				set(t, f, s, "A4", "percent")
				set(t, f, s, "B4", 0.25)
				pct, _ := f.NewStyle(&excelize.Style{NumFmt: 9})
				_ = f.SetCellStyle(s, "B4", "B4", pct)
				set(t, f, s, "A5", "date")
				set(t, f, s, "B5", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC))
				day, _ := f.NewStyle(&excelize.Style{NumFmt: 14})
				_ = f.SetCellStyle(s, "B5", "B5", day)
				set(t, f, s, "A6", "boolean")
				set(t, f, s, "B6", true)
			},
			want: "## Sheet: Sheet1\n\n| Item | Value |\n| --- | --- |\n| integer | 196 |\n| fraction | 1.5 |\n| percent | 25% |\n| date | 2024-03-01 |\n| boolean | TRUE |\n",
		},
		{
			name: "the system short date formats 14 and 22 read as ISO dates",
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "A1", time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC))
				set(t, f, s, "B1", time.Date(2024, 1, 15, 18, 0, 0, 0, time.UTC))
				set(t, f, s, "C1", time.Date(2024, 2, 15, 0, 0, 0, 0, time.UTC))
				day, _ := f.NewStyle(&excelize.Style{NumFmt: 14})
				dayTime, _ := f.NewStyle(&excelize.Style{NumFmt: 22})
				custom := "dd/mm/yyyy"
				own, _ := f.NewStyle(&excelize.Style{CustomNumFmt: &custom})
				_ = f.SetCellStyle(s, "A1", "A1", day)
				_ = f.SetCellStyle(s, "B1", "B1", dayTime)
				_ = f.SetCellStyle(s, "C1", "C1", own)
			},
			want: "## Sheet: Sheet1\n\n| 2024-01-15 | 2024-01-15 18:00 | 15/02/2024 |\n| --- | --- | --- |\n",
		},
		{
			name: "a formula without a cached value shows as its formula",
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "A1", "n")
				set(t, f, s, "B1", "total")
				set(t, f, s, "A2", 4)
				if err := f.SetCellFormula(s, "B2", "A2*10"); err != nil {
					t.Fatal(err)
				}
				if err := f.SetCellFormula(s, "D3", "SUM(B2:B2)"); err != nil {
					t.Fatal(err)
				}
			},
			want: "## Sheet: Sheet1\n\n| n | total |  |  |\n| --- | --- | --- | --- |\n| 4 | =A2\\*10 |  |  |\n|  |  |  | =SUM(B2:B2) |\n",
		},
		{
			name: "an uncached formula in the last row kept under MaxRows is shown",
			cfg:  Config{MaxRows: 3},
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "A1", 1)
				set(t, f, s, "A2", 2)
				if err := f.SetCellFormula(s, "A3", "A1+A2"); err != nil {
					t.Fatal(err)
				}
				set(t, f, s, "A4", 4)
			},
			want: "## Sheet: Sheet1\n\n| 1 |\n| --- |\n| 2 |\n| =A1+A2 |\n\n… 1 more rows omitted\n",
		},
		{
			name: "hidden and very hidden sheets are marked",
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "A1", "shown")
				_, _ = f.NewSheet("Secret")
				set(t, f, "Secret", "A1", "hidden")
				_, _ = f.NewSheet("Deep")
				set(t, f, "Deep", "A1", "very hidden")
				if err := f.SetSheetVisible("Secret", false); err != nil {
					t.Fatal(err)
				}
				if err := f.SetSheetVisible("Deep", false, true); err != nil {
					t.Fatal(err)
				}
			},
			want: "## Sheet: Sheet1\n\n| shown |\n| --- |\n\n## Sheet: Secret (hidden)\n\n| hidden |\n| --- |\n\n## Sheet: Deep (hidden)\n\n| very hidden |\n| --- |\n",
		},
		{
			name: "empty rows are dropped and empty columns trimmed; pipes and line breaks escaped",
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "C3", "a|b")
				set(t, f, s, "D3", "two\nlines")
				set(t, f, s, "C7", "*starred*")
				set(t, f, s, "E7", " padded ")
			},
			want: "## Sheet: Sheet1\n\n| a\\|b | two<br>lines |  |\n| --- | --- | --- |\n| \\*starred\\* |  | padded |\n",
		},
		{
			name: "every sheet in order, an empty one as its heading",
			fill: func(t *testing.T, f *excelize.File, s string) {
				set(t, f, s, "A1", "first")
				_, _ = f.NewSheet("Empty")
				_, _ = f.NewSheet("Totals_2024")
				set(t, f, "Totals_2024", "A1", 42)
			},
			want: "## Sheet: Sheet1\n\n| first |\n| --- |\n\n## Sheet: Empty\n\n## Sheet: Totals_2024\n\n| 42 |\n| --- |\n",
		},
		{
			name: "rows past MaxRows are counted, not read",
			cfg:  Config{MaxRows: 3},
			fill: func(t *testing.T, f *excelize.File, s string) {
				for i := 1; i <= 10; i++ {
					set(t, f, s, fmt.Sprintf("A%d", i), i)
				}
			},
			want: "## Sheet: Sheet1\n\n| 1 |\n| --- |\n| 2 |\n| 3 |\n\n… 7 more rows omitted\n",
		},
		{
			name: "MaxCells bounds the whole workbook",
			cfg:  Config{MaxCells: 5},
			fill: func(t *testing.T, f *excelize.File, s string) {
				for i := 1; i <= 2; i++ {
					set(t, f, s, fmt.Sprintf("A%d", i), "a")
					set(t, f, s, fmt.Sprintf("B%d", i), "b")
				}
				_, _ = f.NewSheet("More")
				for i := 1; i <= 4; i++ {
					set(t, f, "More", fmt.Sprintf("A%d", i), "m")
				}
			},
			want: "## Sheet: Sheet1\n\n| a | b |\n| --- | --- |\n| a | b |\n\n## Sheet: More\n\n| m |\n| --- |\n\n… 3 more rows omitted\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := workbook(t, func(f *excelize.File, s string) { tt.fill(t, f, s) })
			md, model := markdown(t, tt.cfg, XLSX, data)
			if model != ModelXLSX {
				t.Errorf("model = %q", model)
			}
			if md != tt.want {
				t.Errorf("markdown:\n%q\nwant\n%q", md, tt.want)
			}
		})
	}
}

// TestXLSXByteBudget: a shared string repeated in many cells cannot make
// the output grow past the byte budget.
func TestXLSXByteBudget(t *testing.T) {
	long := strings.Repeat("x", 1000)
	data := workbook(t, func(f *excelize.File, s string) {
		for i := 1; i <= 100; i++ {
			set(t, f, s, fmt.Sprintf("A%d", i), long)
		}
	})
	md, _ := markdown(t, Config{MaxOutputBytes: 10000}, XLSX, data)
	if len(md) > 12000 || !strings.Contains(md, "more rows omitted") {
		t.Errorf("%d bytes: %q", len(md), md[max(0, len(md)-80):])
	}
}

// A formula whose cached value is the empty string (<v></v>, as Excel and
// LibreOffice write =IF(A5="","",…)) has a value: its cell is empty, not
// its formula.
func TestXLSXFormulaCachedAsEmptyIsEmpty(t *testing.T) {
	data := workbook(t, func(f *excelize.File, s string) {
		set(t, f, s, "A1", "n")
		set(t, f, s, "B1", "size")
		set(t, f, s, "A2", 1)
		if err := f.SetCellFormula(s, "B2", `IF(A2>1,"big","")`); err != nil {
			t.Fatal(err)
		}
	})
	data = patchPart(t, data, "xl/worksheets/sheet1.xml", func(xml string) string {
		i := strings.Index(xml, "</f>")
		if i < 0 {
			t.Fatalf("no formula in the sheet: %s", xml)
		}
		return xml[:i+len("</f>")] + "<v></v>" + xml[i+len("</f>"):]
	})
	md, _ := markdown(t, Config{}, XLSX, data)
	if want := "## Sheet: Sheet1\n\n| n | size |\n| --- | --- |\n| 1 |  |\n"; md != want {
		t.Errorf("markdown:\n%q\nwant\n%q", md, want)
	}
}

// patchPart rewrites the part name of a zip archive with edit.
func patchPart(t *testing.T, data []byte, name string, edit func(string) string) []byte {
	t.Helper()
	parts := partsOf(t, data)
	for i := range parts {
		if parts[i][0] == name {
			parts[i][1] = edit(parts[i][1])
		}
	}
	return zipOf(t, parts...)
}

// TestXLSXBudgetsChargeRowsPaddedToTheTableWidth: every row of a sheet's
// table is padded to its width, so one value far to the right makes every
// row that wide; the cell and byte budgets count the padded table. They
// counted each row's own cells, and a 20 KB workbook with a value in
// XFD1 made 98 MB of markdown.
func TestXLSXBudgetsChargeRowsPaddedToTheTableWidth(t *testing.T) {
	data := workbook(t, func(f *excelize.File, s string) {
		set(t, f, s, "A1", "head")
		set(t, f, s, "Z1", "stray")
		for i := 2; i <= 100; i++ {
			set(t, f, s, fmt.Sprintf("A%d", i), i)
		}
	})
	for _, cfg := range []Config{{MaxCells: 1000}, {MaxOutputBytes: 2000}} {
		md, _ := markdown(t, cfg, XLSX, data)
		wantPaddedTableWithin(t, cfg, md)
	}
}

// wantPaddedTableWithin checks that md, a table 26 cells wide, keeps
// within cfg's cell or byte budget and says that rows were omitted.
func wantPaddedTableWithin(t *testing.T, cfg Config, md string) {
	t.Helper()
	rows := mdTableRows(md)
	if cells := rows * 26; cfg.MaxCells > 0 && cells > cfg.MaxCells {
		t.Errorf("MaxCells %d: %d rows of 26 cells", cfg.MaxCells, rows)
	}
	if cfg.MaxOutputBytes > 0 && int64(len(md)) > cfg.MaxOutputBytes+100 {
		t.Errorf("MaxOutputBytes %d: %d bytes", cfg.MaxOutputBytes, len(md))
	}
	if rows == 0 || !strings.Contains(md, "more rows omitted") {
		t.Errorf("%+v: %d rows, no note: %q", cfg, rows, md[max(0, len(md)-80):])
	}
}

// mdTableRows counts the body and header rows of the pipe tables in md.
func mdTableRows(md string) int {
	n := 0
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "|") && !mdTableRule.MatchString(l) {
			n++
		}
	}
	return n
}
