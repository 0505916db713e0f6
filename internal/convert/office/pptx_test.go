package office

import (
	"fmt"
	"strings"
	"testing"
)

const pNS = `xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" ` +
	`xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" ` +
	`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" ` +
	`xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"`

// buildPPTX makes a presentation of slides (each the content of its
// p:spTree). Slide i is stored as ppt/slides/slide<len-i>.xml, so file
// names run against presentation order; notes[i] is the notes body text.
func buildPPTX(t testing.TB, slides []string, notes map[int]string) []byte {
	t.Helper()
	parts := [][2]string{
		{"[Content_Types].xml", `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"_rels/.rels", `<Relationships ` + relsNS + `><Relationship Id="rId1" Type="` + relTypeBase + `officeDocument" Target="ppt/presentation.xml"/></Relationships>`},
	}
	var ids, rels strings.Builder
	for i, tree := range slides {
		file := fmt.Sprintf("slide%d.xml", len(slides)-i)
		fmt.Fprintf(&ids, `<p:sldId id="%d" r:id="rIdS%d"/>`, 256+i, i)
		fmt.Fprintf(&rels, `<Relationship Id="rIdS%d" Type="%sslide" Target="slides/%s"/>`, i, relTypeBase, file)
		parts = append(parts, [2]string{"ppt/slides/" + file,
			`<p:sld ` + pNS + `><p:cSld><p:spTree>` + tree + `</p:spTree></p:cSld></p:sld>`})
		if n, ok := notes[i]; ok {
			nfile := fmt.Sprintf("notesSlide%d.xml", i)
			parts = append(parts,
				[2]string{"ppt/slides/_rels/" + file + ".rels", `<Relationships ` + relsNS + `><Relationship Id="rIdN" Type="` + relTypeBase + `notesSlide" Target="../notesSlides/` + nfile + `"/></Relationships>`},
				[2]string{"ppt/notesSlides/" + nfile, `<p:notes ` + pNS + `><p:cSld><p:spTree>` +
					shape(`<p:ph type="sldImg"/>`, "") +
					shape(`<p:ph type="body" idx="1"/>`, `<a:p><a:r><a:t>`+n+`</a:t></a:r></a:p>`) +
					shape(`<p:ph type="sldNum" idx="2"/>`, `<a:p><a:fld type="slidenum"><a:t>7</a:t></a:fld></a:p>`) +
					`</p:spTree></p:cSld></p:notes>`})
		}
	}
	parts = append(parts,
		[2]string{"ppt/presentation.xml", `<p:presentation ` + pNS + `><p:sldIdLst>` + ids.String() + `</p:sldIdLst></p:presentation>`},
		[2]string{"ppt/_rels/presentation.xml.rels", `<Relationships ` + relsNS + `>` + rels.String() + `</Relationships>`})
	return zipOf(t, parts...)
}

// shape is a p:sp with placeholder markup ph ("" for a text box) and
// txBody content paras.
func shape(ph, paras string) string {
	return `<p:sp><p:nvSpPr><p:cNvPr id="1" name="s"/><p:cNvSpPr/><p:nvPr>` + ph + `</p:nvPr></p:nvSpPr><p:spPr/>` +
		`<p:txBody><a:bodyPr/>` + paras + `</p:txBody></p:sp>`
}

func aPara(ppr, text string) string {
	return `<a:p>` + ppr + `<a:r><a:rPr lang="en-US"/><a:t>` + text + `</a:t></a:r></a:p>`
}

func TestPPTX(t *testing.T) {
	tests := []struct {
		name   string
		slides []string
		notes  map[int]string
		want   string
	}{
		{
			name: "slides follow the presentation's order, not part names",
			slides: []string{
				shape(`<p:ph type="title"/>`, aPara("", "First")),
				shape(`<p:ph type="ctrTitle"/>`, aPara("", "Second")),
			},
			want: "## Slide 1: First\n\n## Slide 2: Second\n",
		},
		{
			name: "the title placeholder names the slide wherever it is in the tree",
			slides: []string{
				shape("", aPara("", "A text box first")) + shape(`<p:ph type="title"/>`, aPara("", "The title")),
			},
			want: "## Slide 1: The title\n\nA text box first\n",
		},
		{
			name:   "a slide without a title is numbered only",
			slides: []string{shape("", aPara("", "Just text"))},
			want:   "## Slide 1\n\nJust text\n",
		},
		{
			name: "body placeholders are bulleted by level; text boxes are not",
			slides: []string{
				shape(`<p:ph idx="1"/>`, aPara("", "Point")+aPara(`<a:pPr lvl="1"/>`, "Sub-point")+aPara(`<a:pPr lvl="1"/>`, "Another")+aPara("", "Next point")) +
					shape(`<p:ph type="body" idx="2"/>`, aPara(`<a:pPr><a:buNone/></a:pPr>`, "Not a bullet")) +
					shape("", aPara("", "Caption")+aPara(`<a:pPr><a:buChar char="•"/></a:pPr>`, "Explicit bullet")),
			},
			want: "## Slide 1\n\n- Point\n    - Sub-point\n    - Another\n- Next point\n\nNot a bullet\n\nCaption\n\n- Explicit bullet\n",
		},
		{
			name: "auto-numbered paragraphs count from startAt",
			slides: []string{
				shape("", aPara(`<a:pPr><a:buAutoNum type="arabicPeriod" startAt="3"/></a:pPr>`, "three")+
					aPara(`<a:pPr><a:buAutoNum type="arabicPeriod" startAt="3"/></a:pPr>`, "four")),
			},
			want: "## Slide 1\n\n3. three\n4. four\n",
		},
		{
			name: "runs keep bold, italic and line breaks; slide numbers and dates are dropped",
			slides: []string{
				shape("", `<a:p><a:r><a:rPr b="1"/><a:t>Bold</a:t></a:r><a:r><a:t> and </a:t></a:r><a:r><a:rPr i="1"/><a:t>italic</a:t></a:r><a:br/><a:r><a:t>next line</a:t></a:r></a:p>`) +
					shape(`<p:ph type="sldNum" idx="3"/>`, `<a:p><a:fld type="slidenum"><a:t>4</a:t></a:fld></a:p>`) +
					shape(`<p:ph type="dt" idx="4"/>`, aPara("", "1/1/2024")),
			},
			want: "## Slide 1\n\n**Bold** and *italic*  \nnext line\n",
		},
		{
			name: "tables become pipe tables; merged cells are empty",
			slides: []string{
				`<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="t"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm/>` +
					`<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblGrid/>` +
					`<a:tr><a:tc gridSpan="2"><a:txBody>` + aPara("", "Wide | head") + `</a:txBody></a:tc><a:tc hMerge="1"><a:txBody>` + aPara("", "hidden") + `</a:txBody></a:tc></a:tr>` +
					`<a:tr><a:tc><a:txBody>` + aPara("", "a") + aPara("", "b") + `</a:txBody></a:tc><a:tc><a:txBody>` + aPara("", "c") + `</a:txBody></a:tc></a:tr>` +
					`</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`,
			},
			want: "## Slide 1\n\n| Wide \\| head |  |\n| --- | --- |\n| a<br>b | c |\n",
		},
		{
			name: "groups are read in order; alternate content once",
			slides: []string{
				`<p:grpSp><p:nvGrpSpPr/><p:grpSpPr/>` + shape("", aPara("", "in group")) + `</p:grpSp>` +
					`<mc:AlternateContent><mc:Choice Requires="p14">` + shape("", aPara("", "choice")) + `</mc:Choice>` +
					`<mc:Fallback>` + shape("", aPara("", "fallback")) + `</mc:Fallback></mc:AlternateContent>`,
			},
			want: "## Slide 1\n\nin group\n\nchoice\n",
		},
		{
			name: "picture alt text becomes an image line; a picture without one says nothing",
			slides: []string{
				shape(`<p:ph type="title"/>`, aPara("", "Sales")) +
					`<p:pic><p:nvPicPr><p:cNvPr id="4" name="Chart" descr="bar chart showing sales 2023 = 5M"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:blipFill/><p:spPr/></p:pic>` +
					`<p:pic><p:nvPicPr><p:cNvPr id="5" name="Decoration"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr></p:pic>`,
			},
			want: "## Slide 1: Sales\n\n![bar chart showing sales 2023 = 5M]()\n",
		},
		{
			name:   "speaker notes follow the slide; the notes page's slide number does not",
			slides: []string{shape(`<p:ph type="title"/>`, aPara("", "Talk"))},
			notes:  map[int]string{0: "Say hello"},
			want:   "## Slide 1: Talk\n\n### Notes\n\nSay hello\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, model := markdown(t, Config{}, PPTX, buildPPTX(t, tt.slides, tt.notes))
			if model != ModelPPTX {
				t.Errorf("model = %q", model)
			}
			if md != tt.want {
				t.Errorf("markdown:\n%q\nwant\n%q", md, tt.want)
			}
		})
	}
}

// TestPPTXHyperlinks: external links become markdown links.
func TestPPTXHyperlinks(t *testing.T) {
	data := buildPPTX(t, []string{shape("", `<a:p><a:r><a:rPr><a:hlinkClick r:id="rIdL"/></a:rPr><a:t>site</a:t></a:r></a:p>`)}, nil)
	// Give the slide a relationship for the link.
	data = addParts(t, data, [2]string{"ppt/slides/_rels/slide1.xml.rels",
		`<Relationships ` + relsNS + `><Relationship Id="rIdL" Type="` + relTypeBase + `hyperlink" Target="https://example.com/a" TargetMode="External"/></Relationships>`})
	md, _ := markdown(t, Config{}, PPTX, data)
	if !strings.Contains(md, "[site](https://example.com/a)") {
		t.Errorf("markdown = %q", md)
	}
}
