package convert

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestXMLEntityNamesAreBounded(t *testing.T) {
	refs := func(n int) string {
		var sb strings.Builder
		sb.WriteString("<a>")
		for i := range n {
			fmt.Fprintf(&sb, "&e%d;", i)
		}
		sb.WriteString("&eacute;&amp;</a>")
		return sb.String()
	}
	t.Run("up to the limit kept as their literal text", func(t *testing.T) {
		doc := refs(maxXMLEntityNames)
		out := convert(t, Input{Name: "a.xml", Data: []byte(doc)})
		if out.Content != doc {
			t.Fatalf("Content differs from the document (%d bytes against %d)", len(out.Content), len(doc))
		}
	})
	t.Run("more refused", func(t *testing.T) {
		_, err := New(Config{}).Convert(context.Background(), Input{Name: "a.xml", Data: []byte(refs(maxXMLEntityNames + 1))})
		want := fmt.Sprintf("the XML document references more than %d different undeclared entities", maxXMLEntityNames)
		if err == nil || err.Error() != want {
			t.Fatalf("Convert = %v, want %q", err, want)
		}
	})
	t.Run("repeats of one name count once", func(t *testing.T) {
		doc := "<a>" + strings.Repeat("&e1;&e2;", maxXMLEntityNames) + "</a>"
		if out := convert(t, Input{Name: "a.xml", Data: []byte(doc)}); out.Content != doc {
			t.Fatalf("Content differs from the document")
		}
	})
}

// TestXMLEntityReferencesCostNoMemoryEach: a document of nothing but
// entity references costs the map of the names it uses, not an allocation
// per reference (a regexp's FindAll took 1.2 GiB for 32 MiB of &a;).
func TestXMLEntityReferencesCostNoMemoryEach(t *testing.T) {
	text := "<a>" + strings.Repeat("&amp;&e1;&eacute;", 20000) + "</a>"
	empty := testing.AllocsPerRun(5, func() { knownEntities("<a/>") })
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := knownEntities(text); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > empty+10 {
		t.Errorf("knownEntities made %.0f allocations for 60000 references, %.0f for none", allocs, empty)
	}
}
