package office

import (
	"runtime"
	"strings"
	"testing"
)

// p is a paragraph of one plain run, with paragraph properties ppr.
func p(ppr, text string) string {
	return `<w:p>` + ppr + `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
}

func styled(id, text string) string { return p(`<w:pPr><w:pStyle w:val="`+id+`"/></w:pPr>`, text) }

func numbered(numID, ilvl, text string) string {
	return p(`<w:pPr><w:numPr><w:ilvl w:val="`+ilvl+`"/><w:numId w:val="`+numID+`"/></w:numPr></w:pPr>`, text)
}

func tc(inner string) string    { return `<w:tc>` + inner + `</w:tc>` }
func tr(cells ...string) string { return `<w:tr>` + strings.Join(cells, "") + `</w:tr>` }

const testStyles = `
<w:style w:type="paragraph" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style>
<w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter Head"/><w:basedOn w:val="Heading2"/></w:style>
<w:style w:type="paragraph" w:styleId="Outline"><w:name w:val="My Outline"/><w:pPr><w:outlineLvl w:val="3"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>
<w:style w:type="paragraph" w:styleId="Loop1"><w:name w:val="Loop one"/><w:basedOn w:val="Loop2"/></w:style>
<w:style w:type="paragraph" w:styleId="Loop2"><w:name w:val="Loop two"/><w:basedOn w:val="Loop1"/></w:style>
<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
<w:style w:type="numbering" w:styleId="LinkedList"><w:name w:val="Linked List"/><w:pPr><w:numPr><w:numId w:val="2"/></w:numPr></w:pPr></w:style>
<w:style w:type="character" w:styleId="Heading1Char"><w:name w:val="heading 1 char"/></w:style>`

const testNumbering = `
<w:abstractNum w:abstractNumId="10"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="20"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/></w:lvl></w:abstractNum>
<w:abstractNum w:abstractNumId="30"><w:numStyleLink w:val="LinkedList"/></w:abstractNum>
<w:abstractNum w:abstractNumId="40"><w:lvl w:ilvl="0"><w:numFmt w:val="none"/></w:lvl></w:abstractNum>
<w:num w:numId="1"><w:abstractNumId w:val="10"/></w:num>
<w:num w:numId="2"><w:abstractNumId w:val="20"/></w:num>
<w:num w:numId="3"><w:abstractNumId w:val="20"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>
<w:num w:numId="4"><w:abstractNumId w:val="30"/></w:num>
<w:num w:numId="5"><w:abstractNumId w:val="40"/></w:num>`

func TestDOCX(t *testing.T) {
	tests := []struct {
		name string
		d    docxParts
		want string
	}{
		{
			name: "headings come from style names, ids, basedOn chains and outline levels",
			d: docxParts{styles: testStyles, body: styled("Title", "Title") + styled("berschrift1", "Localized id") +
				styled("Chapter", "Custom style based on heading 2") + styled("Outline", "Outline level 3") +
				p(`<w:pPr><w:outlineLvl w:val="1"/></w:pPr>`, "Direct outline level") +
				p(`<w:pPr><w:pStyle w:val="Heading2"/><w:outlineLvl w:val="9"/></w:pPr>`, "Outline 9 is body text") +
				styled("Loop1", "A style loop ends") + styled("Missing", "Unknown style")},
			want: "# Title\n\n# Localized id\n\n## Custom style based on heading 2\n\n#### Outline level 3\n\n## Direct outline level\n\nOutline 9 is body text\n\nA style loop ends\n\nUnknown style\n",
		},
		{
			name: "without styles.xml the style id names the heading",
			d:    docxParts{body: styled("Heading3", "Three") + styled("heading9", "Deepest")},
			want: "### Three\n\n###### Deepest\n",
		},
		{
			name: "lists: bullets and numbers from numbering.xml, nested by level",
			d: docxParts{styles: testStyles, numbering: testNumbering, body: p("", "Intro") +
				numbered("1", "0", "Bullet") + numbered("1", "1", "Sub-bullet") + numbered("1", "0", "Bullet again") +
				numbered("2", "0", "One") + numbered("2", "1", "One a") + numbered("2", "1", "One b") + numbered("2", "0", "Two") +
				numbered("2", "1", "Two a (restarts)") + p("", "Between") + numbered("2", "0", "Three (continues)")},
			want: "Intro\n\n- Bullet\n    - Sub-bullet\n- Bullet again\n1. One\n    1. One a\n    2. One b\n2. Two\n    1. Two a (restarts)\n\nBetween\n\n3. Three (continues)\n",
		},
		{
			name: "lists from styles, start overrides and numbering-style links; numId 0 and format none are not lists",
			d: docxParts{styles: testStyles, numbering: testNumbering, body: styled("ListBullet", "Styled bullet") +
				numbered("3", "0", "Five") + numbered("3", "0", "Six") + p("", "Gap") + numbered("4", "0", "Linked") +
				numbered("0", "0", "Not numbered") + numbered("5", "0", "Format none") + numbered("99", "0", "Unknown list")},
			want: "- Styled bullet\n5. Five\n6. Six\n\nGap\n\n1. Linked\n\nNot numbered\n\nFormat none\n\nUnknown list\n",
		},
		{
			name: "tables: first row is the header, pipes are escaped, spans and merges keep columns",
			d: docxParts{body: p("", "Before") + `<w:tbl><w:tblPr/><w:tblGrid/>` +
				tr(tc(p("", "Name")), tc(p("", "a | b"))) +
				tr(tc(`<w:tcPr><w:gridSpan w:val="2"/></w:tcPr>`+p("", "Spans two"))) +
				tr(tc(`<w:tcPr><w:vMerge w:val="restart"/></w:tcPr>`+p("", "Top")), tc(p("", "x"))) +
				tr(tc(`<w:tcPr><w:vMerge/></w:tcPr>`+p("", "")), tc(p("", "Line one")+p("", "Line two"))) +
				`<w:tr><w:trPr><w:del w:id="1" w:author="A"/></w:trPr>` + tc(p("", "Deleted row")) + `</w:tr>` +
				`</w:tbl>` + p("", "After")},
			want: "Before\n\n| Name | a \\| b |\n| --- | --- |\n| Spans two |  |\n| Top | x |\n|  | Line one<br>Line two |\n\nAfter\n",
		},
		{
			name: "a one-cell table is a frame: its content reads as paragraphs",
			d:    docxParts{styles: testStyles, body: `<w:tbl>` + tr(tc(styled("Heading2", "Framed")+p("", "Inside"))) + `</w:tbl>`},
			want: "## Framed\n\nInside\n",
		},
		{
			name: "a nested table is flattened into its cell",
			d: docxParts{body: `<w:tbl>` + tr(tc(p("", "Outer")), tc(p("", "Other"))) +
				tr(tc(`<w:tbl>`+tr(tc(p("", "i1")), tc(p("", "i2")))+tr(tc(p("", "i3")), tc(p("", "i4")))+`</w:tbl>`), tc(p("", "z"))) + `</w:tbl>`},
			want: "| Outer | Other |\n| --- | --- |\n| i1 \\| i2<br>i3 \\| i4 | z |\n",
		},
		{
			name: "tracked changes: deletions are skipped, insertions kept",
			d: docxParts{body: `<w:p><w:r><w:t xml:space="preserve">Keep </w:t></w:r>` +
				`<w:del w:id="1" w:author="A"><w:r><w:delText>removed </w:delText></w:r></w:del>` +
				`<w:ins w:id="2" w:author="A"><w:r><w:t xml:space="preserve">added </w:t></w:r></w:ins>` +
				`<w:moveFrom w:id="3" w:author="A"><w:r><w:t>moved away</w:t></w:r></w:moveFrom>` +
				`<w:moveTo w:id="4" w:author="A"><w:r><w:t>moved here</w:t></w:r></w:moveTo></w:p>` +
				`<w:del w:id="5" w:author="A">` + p("", "Deleted paragraph") + `</w:del>`},
			want: "Keep added moved here\n",
		},
		{
			name: "emphasis: bold and italic runs, white space outside delimiters",
			d: docxParts{body: `<w:p><w:r><w:t xml:space="preserve">Plain </w:t></w:r>` +
				`<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">bold </w:t></w:r>` +
				`<w:r><w:rPr><w:b/><w:i/></w:rPr><w:t>both</w:t></w:r>` +
				`<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve"> bold</w:t></w:r>` +
				`<w:r><w:rPr><w:b w:val="0"/><w:i w:val="true"/></w:rPr><w:t xml:space="preserve"> italic</w:t></w:r>` +
				`<w:r><w:rPr><w:vanish/></w:rPr><w:t>hidden</w:t></w:r>` +
				`<w:r><w:rPr><w:strike/></w:rPr><w:t xml:space="preserve"> gone</w:t></w:r></w:p>`},
			want: "Plain **bold *both* bold** *italic* ~~gone~~\n",
		},
		{
			name: "text that looks like markdown is escaped",
			d: docxParts{body: p("", "# not a heading") + p("", "1. not a list") + p("", "- nor this") +
				p("", "2*3 = 6, snake_case and _underscored_, `code`, &lt;tag&gt;, [x](y)") + p("", "---")},
			want: "\\# not a heading\n\n1\\. not a list\n\n\\- nor this\n\n2\\*3 = 6, snake_case and \\_underscored\\_, \\`code\\`, \\<tag>, [x\\](y)\n\n\\---\n",
		},
		{
			name: "hyperlinks: external web links kept, anchors and other schemes as text",
			d: docxParts{
				links: map[string]string{"rIdL1": "https://example.com/a?b=c", "rIdL2": "javascript:alert(1)", "rIdL3": "https://example.com/with space"},
				body: `<w:p><w:hyperlink r:id="rIdL1"><w:r><w:t>web</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve">, </w:t></w:r>` +
					`<w:hyperlink w:anchor="Bookmark"><w:r><w:t>anchor</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve">, </w:t></w:r>` +
					`<w:hyperlink r:id="rIdL2"><w:r><w:t>script</w:t></w:r></w:hyperlink><w:r><w:t xml:space="preserve">, </w:t></w:r>` +
					`<w:hyperlink r:id="rIdL3"><w:r><w:t>spaced</w:t></w:r></w:hyperlink></w:p>`,
			},
			want: "[web](https://example.com/a?b=c), anchor, script, [spaced](<https://example.com/with%20space>)\n",
		},
		{
			name: "line breaks, tabs and non-breaking hyphens",
			d:    docxParts{body: `<w:p><w:r><w:t>one</w:t><w:br/><w:t>two</w:t><w:tab/><w:t>col</w:t><w:noBreakHyphen/><w:t>x</w:t><w:cr/><w:t>three</w:t></w:r></w:p>`},
			want: "one  \ntwo\tcol-x  \nthree\n",
		},
		{
			name: "footnotes become markdown footnotes in reference order",
			d: docxParts{
				body: `<w:p><w:r><w:t>Claim</w:t></w:r><w:r><w:footnoteReference w:id="7"/></w:r><w:r><w:t xml:space="preserve"> and more</w:t></w:r><w:r><w:footnoteReference w:id="3"/></w:r></w:p>`,
				footnotes: `<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>` +
					`<w:footnote w:id="3"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> Second note.</w:t></w:r></w:p></w:footnote>` +
					`<w:footnote w:id="7"><w:p><w:r><w:footnoteRef/></w:r><w:r><w:t xml:space="preserve"> First note,</w:t></w:r></w:p><w:p><w:r><w:t>two paragraphs.</w:t></w:r></w:p></w:footnote>` +
					`<w:footnote w:id="9"><w:p><w:r><w:t>Never referenced.</w:t></w:r></w:p></w:footnote>`,
			},
			want: "Claim[^1] and more[^2]\n\n[^1]: First note, two paragraphs.\n[^2]: Second note.\n",
		},
		{
			name: "a text box follows its paragraph once, though it is stored twice",
			d: docxParts{body: `<w:p><w:r><w:t xml:space="preserve">Anchor </w:t></w:r><w:r><mc:AlternateContent>` +
				`<mc:Choice Requires="wps"><w:drawing><wp:anchor><a:graphic><a:graphicData><wps:wsp><wps:txbx><w:txbxContent>` + p("", "In the box") + `</w:txbxContent></wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice>` +
				`<mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent>` + p("", "In the box") + `</w:txbxContent></v:textbox></v:shape></w:pict></mc:Fallback>` +
				`</mc:AlternateContent></w:r><w:r><w:t>text</w:t></w:r></w:p>`},
			want: "Anchor text\n\nIn the box\n",
		},
		{
			name: "content controls, smart tags and simple fields keep their text; legacy checkboxes show their state",
			d: docxParts{body: `<w:sdt><w:sdtPr><w:alias w:val="x"/></w:sdtPr><w:sdtContent>` + p("", "Block control") + `</w:sdtContent></w:sdt>` +
				`<w:p><w:sdt><w:sdtContent><w:r><w:t xml:space="preserve">inline </w:t></w:r></w:sdtContent></w:sdt>` +
				`<w:smartTag><w:r><w:t xml:space="preserve">tagged </w:t></w:r></w:smartTag>` +
				`<w:fldSimple w:instr="PAGE"><w:r><w:t>7</w:t></w:r></w:fldSimple></w:p>` +
				`<w:p><w:r><w:fldChar w:fldCharType="begin"><w:ffData><w:checkBox><w:default w:val="0"/><w:checked/></w:checkBox></w:ffData></w:fldChar></w:r>` +
				`<w:r><w:instrText> FORMCHECKBOX </w:instrText></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r><w:r><w:t xml:space="preserve"> agreed</w:t></w:r></w:p>`},
			want: "Block control\n\ninline tagged 7\n\n☒ agreed\n",
		},
		{
			name: "a content control showing its placeholder prompt has no text",
			d: docxParts{body: `<w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent>` + p("", "Click or tap here to enter text.") + `</w:sdtContent></w:sdt>` +
				`<w:p><w:r><w:t xml:space="preserve">Name: </w:t></w:r><w:sdt><w:sdtPr><w:showingPlcHdr/></w:sdtPr><w:sdtContent><w:r><w:t>Enter a name.</w:t></w:r></w:sdtContent></w:sdt></w:p>`},
			want: "Name:\n",
		},
		{
			name: "picture alt text becomes an image without a destination, in place",
			d: docxParts{body: `<w:p><w:r><w:t xml:space="preserve">Logo: </w:t></w:r><w:r><w:drawing><wp:inline><wp:extent cx="1" cy="1"/>` +
				`<wp:docPr id="1" name="Picture 1" descr="Company logo [ACME] with&#10;IBAN DE89"/><a:graphic><a:graphicData/></a:graphic></wp:inline></w:drawing></w:r></w:p>` +
				`<w:p><w:r><w:drawing><wp:anchor><wp:docPr id="2" name="Picture 2"/></wp:anchor></w:drawing></w:r></w:p>` +
				`<w:p><w:r><w:pict><v:shape alt="Old VML chart"/></w:pict></w:r></w:p>`},
			want: "Logo: ![Company logo \\[ACME\\] with IBAN DE89]()\n\n![Old VML chart]()\n",
		},
		{
			name: "symbol-font check marks and boxes are kept, other symbol glyphs dropped",
			d: docxParts{body: `<w:p><w:r><w:sym w:font="Wingdings" w:char="F0FC"/><w:t xml:space="preserve"> done </w:t>` +
				`<w:sym w:font="Wingdings" w:char="F0FE"/><w:t xml:space="preserve"> yes </w:t><w:sym w:font="Wingdings" w:char="F0A8"/>` +
				`<w:t xml:space="preserve"> no </w:t><w:sym w:font="Wingdings" w:char="F078"/><w:t xml:space="preserve"> x </w:t>` +
				`<w:sym w:font="Wingdings 2" w:char="0050"/><w:t xml:space="preserve"> w2 </w:t><w:sym w:font="Wingdings" w:char="F04A"/>` +
				`<w:sym w:font="Symbol" w:char="F0D6"/></w:r></w:p>`},
			want: "✓ done ☑ yes ☐ no ☒ x ✓ w2 √\n",
		},
		{
			name: "an empty document is empty",
			d:    docxParts{body: p("", "") + `<w:sectPr/>`},
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, model := markdown(t, Config{}, DOCX, buildDOCX(t, tt.d))
			if model != ModelDOCX {
				t.Errorf("model = %q", model)
			}
			if md != tt.want {
				t.Errorf("markdown:\n%q\nwant\n%q", md, tt.want)
			}
		})
	}
}

// TestDOCXRowsStartingLaterInTheGridKeepTheirColumns: a row with
// w:gridBefore (a totals row under the amount column) starts that many
// columns in; its cells read under their own columns, not from the left.
func TestDOCXRowsStartingLaterInTheGridKeepTheirColumns(t *testing.T) {
	gridBefore := func(n string, cells ...string) string {
		return `<w:tr><w:trPr><w:gridBefore w:val="` + n + `"/></w:trPr>` + strings.Join(cells, "") + `</w:tr>`
	}
	body := `<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>` +
		tr(tc(p("", "Item")), tc(p("", "Qty")), tc(p("", "Amount"))) +
		tr(tc(p("", "Widget")), tc(p("", "2")), tc(p("", "10.00"))) +
		gridBefore("1", tc(p("", "Subtotal")), tc(p("", "10.00"))) +
		gridBefore("2", tc(p("", "20.00"))) +
		`<w:tr><w:trPr><w:gridBefore w:val="1"/><w:gridAfter w:val="1"/></w:trPr>` + tc(p("", "Middle")) + `</w:tr>` +
		`</w:tbl>`
	md, _ := markdown(t, Config{}, DOCX, buildDOCX(t, docxParts{body: body}))
	want := "| Item | Qty | Amount |\n| --- | --- | --- |\n| Widget | 2 | 10.00 |\n|  | Subtotal | 10.00 |\n|  |  | 20.00 |\n|  | Middle |  |\n"
	if md != want {
		t.Errorf("markdown:\n%q\nwant\n%q", md, want)
	}
}

// TestDOCXListInstancesOfOneDefinitionShareTheirCount: Word counts the
// numbering instances (w:num) of one abstract definition as one list, as
// generators such as python-docx write them: the second goes on at 3.
// An instance that overrides the start restarts the count at its first
// item; a different definition counts on its own.
func TestDOCXListInstancesOfOneDefinitionShareTheirCount(t *testing.T) {
	numbering := `<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl>` +
		`<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/></w:lvl></w:abstractNum>` +
		`<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl></w:abstractNum>` +
		`<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>` +
		`<w:num w:numId="2"><w:abstractNumId w:val="0"/></w:num>` +
		`<w:num w:numId="3"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>` +
		`<w:num w:numId="4"><w:abstractNumId w:val="1"/></w:num>`
	body := numbered("1", "0", "One") + numbered("1", "0", "Two") + p("", "Text") +
		numbered("2", "0", "Three") + numbered("2", "1", "Three a") + numbered("1", "0", "Four") + p("", "Text") +
		numbered("3", "0", "Restarted") + numbered("3", "0", "Second") + p("", "Text") +
		numbered("4", "0", "Own list")
	md, _ := markdown(t, Config{}, DOCX, buildDOCX(t, docxParts{numbering: numbering, body: body}))
	want := "1. One\n2. Two\n\nText\n\n3. Three\n    1. Three a\n4. Four\n\nText\n\n1. Restarted\n2. Second\n\nText\n\n1. Own list\n"
	if md != want {
		t.Errorf("markdown:\n%q\nwant\n%q", md, want)
	}
}

// TestDOCXRubyKeepsItsBaseText: a word with a phonetic guide (furigana)
// is its base text; the guide is not repeated beside it.
func TestDOCXRubyKeepsItsBaseText(t *testing.T) {
	body := `<w:p><w:r><w:t>住所は</w:t></w:r><w:r><w:ruby><w:rubyPr><w:lid w:val="ja-JP"/></w:rubyPr>` +
		`<w:rt><w:r><w:t>とうきょう</w:t></w:r></w:rt><w:rubyBase><w:r><w:rPr><w:b/></w:rPr><w:t>東京</w:t></w:r></w:rubyBase></w:ruby></w:r>` +
		`<w:r><w:t>です</w:t></w:r></w:p>`
	md, _ := markdown(t, Config{}, DOCX, buildDOCX(t, docxParts{body: body}))
	if want := "住所は**東京**です\n"; md != want {
		t.Errorf("markdown = %q, want %q", md, want)
	}
}

// TestDOCXBudgets: table cells and output bytes are bounded, and the
// markdown says what was left out.
func TestDOCXBudgets(t *testing.T) {
	var rows strings.Builder
	for range 10 {
		rows.WriteString(tr(tc(p("", "a")), tc(p("", "b"))))
	}
	table := `<w:tbl>` + rows.String() + `</w:tbl>`
	md, _ := markdown(t, Config{MaxCells: 8}, DOCX, buildDOCX(t, docxParts{body: table}))
	if !strings.HasSuffix(md, "| a | b |\n\n… 6 more rows omitted\n") || strings.Count(md, "| a | b |") != 4 {
		t.Errorf("cell budget: %q", md)
	}

	long := strings.Repeat(p("", strings.Repeat("word ", 20)), 100)
	md, _ = markdown(t, Config{MaxOutputBytes: 1000}, DOCX, buildDOCX(t, docxParts{body: long}))
	if len(md) > 1200 || !strings.HasSuffix(md, "… the rest of the document is omitted: its markdown exceeds the 1000 bytes limit\n") {
		t.Errorf("byte budget: %d bytes, %q", len(md), md[max(0, len(md)-120):])
	}
}

// TestDOCXRowsPastTheCellBudgetAreNotKept: a table's rows past the cell
// budget are counted while the table is read, not held until it is
// rendered: a cell spanning 64 columns is 64 cells from 60 bytes of XML,
// and a 63 MB table of such rows held 2.4 GB. The markdown is what the
// renderer made of the whole table before.
func TestDOCXRowsPastTheCellBudgetAreNotKept(t *testing.T) {
	const rows = 20000
	spanning := tr(`<w:tc><w:tcPr><w:gridSpan w:val="64"/></w:tcPr>` + p("", "x") + `</w:tc>`)
	data := buildDOCX(t, docxParts{body: `<w:tbl>` + strings.Repeat(spanning, rows) + `</w:tbl>`})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	md, _ := markdown(t, Config{MaxCells: 100, MaxRatio: 1000}, DOCX, data) // repeated rows zip well
	runtime.ReadMemStats(&after)
	if want := "| x |" + strings.Repeat("  |", 63) + "\n|" + strings.Repeat(" --- |", 64) + "\n\n… 19999 more rows omitted\n"; md != want {
		t.Errorf("markdown = %q, want %q", md, want)
	}
	// Reading the XML costs some 32 MiB; keeping every row's cells until
	// the renderer cut them took 100 MiB in all.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 56<<20 {
		t.Errorf("reading the table allocated %d MiB", alloc>>20)
	}
}

// TestDOCXHeadersAndFooters: each distinct header comes first and each
// distinct footer last, however many sections reference them.
func TestDOCXHeadersAndFooters(t *testing.T) {
	sect := `<w:sectPr><w:headerReference w:type="default" r:id="rIdH"/><w:footerReference w:type="default" r:id="rIdF1"/></w:sectPr>`
	body := p(`<w:pPr>`+sect+`</w:pPr>`, "Section one") + p("", "Section two") + sect
	data := buildDOCX(t, docxParts{body: body})
	data = removePart(t, data, "word/_rels/document.xml.rels")
	data = addParts(t, data,
		[2]string{"word/_rels/document.xml.rels", `<Relationships ` + relsNS + `>` +
			`<Relationship Id="rIdH" Type="` + relTypeBase + `header" Target="header1.xml"/>` +
			`<Relationship Id="rIdF1" Type="` + relTypeBase + `footer" Target="footer1.xml"/></Relationships>`},
		[2]string{"word/header1.xml", `<w:hdr ` + wNS + `>` + p("", "ACME Corp") + `</w:hdr>`},
		[2]string{"word/footer1.xml", `<w:ftr ` + wNS + `>` + p("", "Page footer") + `</w:ftr>`})
	md, _ := markdown(t, Config{}, DOCX, data)
	if want := "ACME Corp\n\nSection one\n\nSection two\n\nPage footer\n"; md != want {
		t.Errorf("markdown = %q, want %q", md, want)
	}
}

// TestDOCXRowsAfterOnePastTheCellBudgetAreCut: a row past the cell budget
// ends its table, as the renderer cuts one: a narrower row after it that
// would fit is not shown out of order.
func TestDOCXRowsAfterOnePastTheCellBudgetAreCut(t *testing.T) {
	wide := tr(`<w:tc><w:tcPr><w:gridSpan w:val="10"/></w:tcPr>` + p("", "wide") + `</w:tc>`)
	body := `<w:tbl>` + tr(tc(p("", "a")), tc(p("", "b"))) + wide + tr(tc(p("", "c")), tc(p("", "d"))) + `</w:tbl>`
	md, _ := markdown(t, Config{MaxCells: 10}, DOCX, buildDOCX(t, docxParts{body: body}))
	if want := "| a | b |\n| --- | --- |\n\n… 2 more rows omitted\n"; md != want {
		t.Errorf("markdown = %q, want %q", md, want)
	}
}
