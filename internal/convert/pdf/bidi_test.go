package pdf

import (
	"strings"
	"testing"
	"unicode/utf8"
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

// rtlLn is ln for a right-to-left line set flush with right (visual order).
func rtlLn(block int, right, y, size float64, visual string) textLine {
	w := 0.0
	for i, f := range strings.Fields(visual) {
		if i > 0 {
			w += 0.25 * size
		}
		w += 0.5 * size * float64(utf8.RuneCountInString(f))
	}
	return ln(block, right-w, y, size, visual)
}

func TestRightToLeftParagraphsAlignOnTheRight(t *testing.T) {
	t.Parallel()
	got := layoutHTML(
		rtlLn(0, 540, 100, 12, "יטחז והד גבא ודהוזחטי יטחז והד גבא ודהוזחטי"),
		rtlLn(0, 540, 116, 12, ".גבא והד"),
		rtlLn(0, 540, 132, 12, "יטחז והד גבא ודהוזחטי יטחז והד גבא ודהוזחטי"),
		rtlLn(0, 540, 148, 12, "יטחז והד גבא ודהוזחטי"),
	)
	want := "<p>יטחזוהדו אבג דהו זחטי יטחזוהדו אבג דהו זחטי דהו אבג.</p>\n" +
		"<p>יטחזוהדו אבג דהו זחטי יטחזוהדו אבג דהו זחטי יטחזוהדו אבג דהו זחטי</p>\n"
	if got != want {
		t.Errorf("page:\n%s\nwant:\n%s", got, want)
	}
}
