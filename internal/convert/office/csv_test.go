package office

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

func TestSniffDelimiter(t *testing.T) {
	tests := []struct {
		name string
		text string
		want rune
	}{
		{"comma", "name,total\n\"Smith, J\",12\nLee,7\n", ','},
		{"semicolon with decimal commas", "Name;Betrag;Datum\nMüller;1.234,56;01.02.2024\nSchmidt;99,00;15.03.2024\n", ';'},
		{"semicolon with quoted semicolons", "a;b\n\"x;y\";1,5\nz;2,5\n", ';'},
		{"tab", "a\tb\tc\n1,5\t2\t3\n4\t5,5\t6\n", '\t'},
		{"pipe", "a|b\n1|2\n", '|'},
		{"comma fields holding semicolons", "id,note\n1,a;b\n2,c\n", ','},
		{"one column", "total\n12\n7\n", ','},
		{"empty", "", ','},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SniffDelimiter(tt.text); got != tt.want {
				t.Errorf("SniffDelimiter = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSemicolonCSVKeepsDecimalCommas: a CSV exported in a decimal-comma
// locale reads as a three-column table, its amounts whole.
func TestSemicolonCSVKeepsDecimalCommas(t *testing.T) {
	text := "Name;Betrag;Datum\nMüller;1.234,56;01.02.2024\nSchmidt;99,00;15.03.2024\n"
	got, err := CSVMarkdown(context.Background(), Config{}, text, SniffDelimiter(text))
	if err != nil {
		t.Fatal(err)
	}
	want := "| Name | Betrag | Datum |\n| --- | --- | --- |\n| Müller | 1.234,56 | 01.02.2024 |\n| Schmidt | 99,00 | 15.03.2024 |"
	if got != want {
		t.Errorf("CSVMarkdown =\n%s\nwant\n%s", got, want)
	}
}

// TestCSVRowOfDelimitersPastTheCellLimitIsNotRead: a row with more
// delimiters than the cell limit is given up on while it is read, not
// built field by field and then dropped: 100 MiB of commas took 8.9 GiB.
// The rows before it stay, and the note says where the table stops.
func TestCSVRowOfDelimitersPastTheCellLimitIsNotRead(t *testing.T) {
	for _, comma := range []rune{',', '\t', '€'} {
		t.Run(string(comma), func(t *testing.T) {
			d := string(comma)
			text := "a" + d + "b\n1" + d + "2\n" + strings.Repeat(d, 1<<20) + "\nx" + d + "y\n"
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := CSVMarkdown(context.Background(), Config{MaxCells: 1000}, text, comma)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			want := "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n… rows 3 and after omitted: row 3 has more than 1000 cells"
			if got != want {
				t.Errorf("CSVMarkdown =\n%s\nwant\n%s", got, want)
			}
			// Reading the row whole allocates some 40 bytes a field (over
			// 40 MiB here); stopped, it is the guard's few thousand.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("allocated %d MiB reading a row of a million delimiters", alloc>>20)
			}
		})
	}
}

// TestCSVGuardLeavesNarrowRowsToTheCellLimit: the guard counts the
// reader's look-ahead as part of a row, so short rows under a small cell
// limit are cut by the limit as before, with the omitted rows counted.
func TestCSVGuardLeavesNarrowRowsToTheCellLimit(t *testing.T) {
	text := strings.Repeat("a,b\n", 5000)
	got, err := CSVMarkdown(context.Background(), Config{MaxCells: 10}, text, ',')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, "… 4995 more rows omitted") {
		t.Errorf("CSVMarkdown ends %q, want the 4995 rows past the limit counted", got[max(0, len(got)-80):])
	}
}

// TestCSVRowPastTheOutputLimitIsNotReadWhole: a row with more text than
// the output may still hold is given up on while it is read, not read
// whole (the line, its fields and their strings) to be dropped: one
// field of 100 MiB took 700 MiB. A row that fits is read as before, and
// a quoted one is measured by its text, not its quotes.
func TestCSVRowPastTheOutputLimitIsNotReadWhole(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name, text, want string
		maxAlloc         uint64 // read whole, the long row costs three times its text or more
	}{
		{"one long field", "a,b\n1,2\n" + strings.Repeat("x", 8<<20) + "\nc,d\n",
			"| a | b |\n| --- | --- |\n| 1 | 2 |\n\n… rows 3 and after omitted: row 3 does not fit in the 1 MiB output limit", 8 * limit},
		{"a long quoted field with line breaks", "a,b\n\n\n\"" + strings.Repeat("x\r\n", 3<<20) + "\",1\n",
			"| a | b |\n| --- | --- |\n\n… rows 2 and after omitted: row 2 does not fit in the 1 MiB output limit", 8 * limit},
		// The kept row costs some 10 MiB itself (read, kept, rendered).
		{"after a row that took most of the room", "a,b\n" + strings.Repeat("y", limit-100) + ",1\n" + strings.Repeat("z", 4<<20) + "\n",
			"| a | b |\n| --- | --- |\n| " + strings.Repeat("y", limit-100) + " | 1 |\n\n… rows 3 and after omitted: row 3 does not fit in the 1 MiB output limit", 14 * limit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			got, err := CSVMarkdown(context.Background(), Config{MaxOutputBytes: limit}, tt.text, ',')
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("CSVMarkdown =\n%.300s\nwant\n%.300s", got, tt.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tt.maxAlloc {
				t.Errorf("allocated %d MiB for a row over a %d MiB limit", alloc>>20, limit>>20)
			}
		})
	}
	// Rows that fit are kept, quotes and all, right up to the limit.
	quoted := "\"" + strings.Repeat("\"\"", limit/4) + "\"\n"
	got, err := CSVMarkdown(context.Background(), Config{MaxOutputBytes: limit}, "q\n"+quoted, ',')
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "omitted") || !strings.Contains(got, strings.Repeat("\"", limit/4)) {
		t.Errorf("a quoted row of %d KiB of text under a %d MiB limit was not kept: %.200s", limit/4>>10, limit>>20, got)
	}
}

// TestCSVBudgetsChargeRowsPaddedToTheTableWidth: a row with a value after
// many delimiters pads every row of the table to its width; the budgets
// count the padded table. They counted each row's own cells: a 16 KB CSV
// (10,000 commas, then 3,000 one-cell rows) made 90 MB of markdown.
func TestCSVBudgetsChargeRowsPaddedToTheTableWidth(t *testing.T) {
	text := "head" + strings.Repeat(",", 25) + "stray\n" + strings.Repeat("a\n", 99)
	for _, cfg := range []Config{{MaxCells: 1000}, {MaxOutputBytes: 2000}} {
		md, err := CSVMarkdown(context.Background(), cfg, text, ',')
		if err != nil {
			t.Fatal(err)
		}
		wantPaddedTableWithin(t, cfg, md)
	}
}
