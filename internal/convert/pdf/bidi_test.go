package pdf

import (
	"strings"
	"testing"
)

func TestRightToLeftLinesAreReadInLogicalOrder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, visual, want string }{
		{"Hebrew words", "דגבא יטחז והד", "דהו זחטי אבגד"},
		{"a number keeps its digits", "3.50 :ריחמ", "מחיר: 3.50"},
		{"two numbers stay apart", "15 - 12 םידומע", "עמודים 12 - 15"},
		{"Latin words keep their order", "New York ךרדב םיעסונ", "נוסעים בדרך New York"},
		{"brackets are mirrored", "(ב) א", "א (ב)"},
		{"a letter keeps its mark after it", "\u05d1\u05d0\u05bc", "\u05d0\u05bc\u05d1"},
		{"Arabic", "ملاعلا ابحرم", "مرحبا العالم"},
		{"a Hebrew word in a Latin line", "the word םולש means peace", "the word שלום means peace"},
		{"a Latin line is left as it is", "The quick brown fox (3.50)", "The quick brown fox (3.50)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := logicalOrder(tt.visual); got != tt.want {
				t.Errorf("logicalOrder(%q) = %q, want %q", tt.visual, got, tt.want)
			}
		})
	}
}

func TestARightToLeftPageReadsInLogicalOrder(t *testing.T) {
	t.Parallel()
	// As poppler gives them: words left to right, letters as drawn.
	got := layoutHTML(
		ln(0, 300, 100, 12, "דגבא יטחז והד גבא"),
		ln(0, 324, 116, 12, "ז(2) חטי"),
	)
	for _, want := range []string{"אבג דהו זחטי אבגד", "יטח (2)ז"} {
		if !strings.Contains(got, want) {
			t.Errorf("page:\n%s\nwant it to hold %q", got, want)
		}
	}
}
