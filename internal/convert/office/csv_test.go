package office

import (
	"context"
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
