package office

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
)

// docxMarkdown reads a WordprocessingML package: the main document, with
// its headers before it and its footers and notes after it.
func docxMarkdown(ctx context.Context, cfg Config, data []byte) (string, error) {
	a, err := openArchive(data, "DOCX", cfg)
	if err != nil {
		return "", err
	}
	main, err := a.mainPart()
	if err != nil {
		return "", err
	}
	docRels, docRelList, err := a.rels(main)
	if err != nil {
		return "", err
	}
	parts := map[string]string{} // relationship type → first part of it
	for _, rl := range docRelList {
		if rl.External {
			continue
		}
		for _, typ := range []string{"styles", "numbering", "footnotes", "endnotes"} {
			if _, seen := parts[typ]; !seen && relType(rl.Type, typ) {
				parts[typ] = rl.Target
			}
		}
	}
	r := &docxReader{ctx: ctx, a: a, maxCells: cfg.MaxCells, notes: map[noteKey]int{}, counters: map[string]*listCounters{}, restarted: map[string]bool{}}
	if r.styles, err = readStyles(a, parts["styles"]); err != nil {
		return "", err
	}
	if r.numbering, err = readNumbering(a, parts["numbering"]); err != nil {
		return "", err
	}
	// The body is rendered as it is read, so memory follows the (bounded)
	// output rather than the document.
	rd := newRenderer(cfg)
	body := rd.writer()
	if err := r.readPart(main, docRels, "body", body.add); err != nil {
		return "", err
	}

	// Headers go before the body and footers after it, each distinct one
	// once: every section may repeat the same.
	var sections []string
	seen := map[string]bool{}
	addOnce := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			sections = append(sections, s)
		}
	}
	for _, part := range r.partRefs(docRels, r.headerRefs) {
		s, err := r.headerFooter(part, "hdr", rd)
		if err != nil {
			return "", err
		}
		addOnce(s)
	}
	sections = append(sections, body.String())
	seen[body.String()] = true
	for _, part := range r.partRefs(docRels, r.footerRefs) {
		s, err := r.headerFooter(part, "ftr", rd)
		if err != nil {
			return "", err
		}
		addOnce(s)
	}
	notes, err := r.noteDefinitions(parts["footnotes"], parts["endnotes"], rd)
	if err != nil {
		return "", err
	}
	sections = append(sections, notes, rd.truncationNote())
	return joinSections(sections), nil
}

// joinSections joins non-empty markdown sections with blank lines.
func joinSections(sections []string) string {
	var kept []string
	for _, s := range sections {
		if s = strings.TrimSpace(s); s != "" {
			kept = append(kept, s)
		}
	}
	if len(kept) == 0 {
		return ""
	}
	return strings.Join(kept, "\n\n") + "\n"
}

// noteKey names a footnote or endnote.
type noteKey struct {
	endnote bool
	id      string
}

// docxReader holds what reading one package's parts shares.
type docxReader struct {
	ctx       context.Context
	a         *archive
	styles    map[string]*style
	numbering *numbering
	rels      map[string]rel // of the part being read
	depth     int
	// cells counts the table cells read, spans included, against
	// maxCells (Config.MaxCells): rows past it are counted, not kept.
	cells, maxCells int

	// counters number list items, per list (level.list).
	counters map[string]*listCounters
	// restarted holds the numbering instances and levels whose start
	// override has restarted their list ("numId/ilvl").
	restarted map[string]bool

	headerRefs, footerRefs []string // relationship ids, in document order
	notes                  map[noteKey]int
	noteOrder              []noteKey
}

// listCounters number the items of one list, per level.
type listCounters struct {
	n       [9]int
	started [9]bool
}

func (r *docxReader) enter() error {
	r.depth++
	if r.depth > maxDepth {
		return invalidError(r.a.doc, nil, "its elements nest more than %d deep", maxDepth)
	}
	return nil
}

func (r *docxReader) leave() { r.depth-- }

// readPart reads the blocks of a story part (document, header, footer):
// the children of its first element named container, each top-level
// block handed to emit as soon as it is read. Reading stops when emit
// returns false.
func (r *docxReader) readPart(part string, rels map[string]rel, container string, emit func(block) bool) error {
	rc, err := r.a.open(part)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return invalidError(r.a.doc, nil, "part %s is missing", part)
		}
		return err
	}
	defer rc.Close()
	r.rels = rels
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return invalidError(r.a.doc, nil, "part %s has no %s element", part, container)
		}
		if err != nil {
			return r.a.readErr(part, err)
		}
		if se, ok := tok.(xml.StartElement); ok && isW(se.Name) && se.Name.Local == container {
			break
		}
	}
	errStop := errors.New("output budget spent")
	var bs []block
	err = eachChild(dec, func(t xml.StartElement) error {
		if err := r.blockElement(dec, t, &bs); err != nil {
			return err
		}
		for _, b := range bs {
			if !emit(b) {
				return errStop
			}
		}
		bs = bs[:0]
		return nil
	})
	if err != nil && err != errStop {
		return r.a.readErr(part, err)
	}
	return nil
}

// partRefs resolves relationship ids to their parts, each part once.
func (r *docxReader) partRefs(docRels map[string]rel, ids []string) []string {
	var parts []string
	seen := map[string]bool{}
	for _, id := range ids {
		rl, ok := docRels[id]
		if !ok || rl.External || seen[rl.Target] || !r.a.has(rl.Target) {
			continue
		}
		seen[rl.Target] = true
		parts = append(parts, rl.Target)
	}
	return parts
}

// headerFooter renders a header (container "hdr") or footer ("ftr") part.
func (r *docxReader) headerFooter(part, container string, rd *renderer) (string, error) {
	rels, _, err := r.a.rels(part)
	if err != nil {
		return "", err
	}
	w := rd.writer()
	if err := r.readPart(part, rels, container, w.add); err != nil {
		return "", err
	}
	return w.String(), nil
}

// blocks reads the block-level children of the current element.
func (r *docxReader) blocks(dec *xml.Decoder) ([]block, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.leave()
	var bs []block
	err := eachChild(dec, func(t xml.StartElement) error { return r.blockElement(dec, t, &bs) })
	return bs, err
}

// blockElement reads one block-level element into bs: a paragraph (and
// the text boxes anchored in it), a table, or a container of blocks.
func (r *docxReader) blockElement(dec *xml.Decoder, t xml.StartElement, bs *[]block) error {
	if isAlternate(t) {
		return readAlternate(dec, func() error {
			inner, err := r.blocks(dec)
			*bs = append(*bs, inner...)
			return err
		})
	}
	if !isW(t.Name) {
		return dec.Skip()
	}
	switch t.Name.Local {
	case "p":
		p, after, err := r.paragraph(dec)
		if err != nil {
			return err
		}
		*bs = append(*bs, p)
		*bs = append(*bs, after...)
	case "tbl":
		tb, err := r.table(dec)
		if err != nil {
			return err
		}
		*bs = append(*bs, tb)
	case "sdt":
		return r.sdt(dec, func() error {
			inner, err := r.blocks(dec)
			*bs = append(*bs, inner...)
			return err
		})
	case "sdtContent", "customXml", "ins", "moveTo", "smartTag", "txbxContent":
		// Containers whose content is part of the text.
		inner, err := r.blocks(dec)
		if err != nil {
			return err
		}
		*bs = append(*bs, inner...)
	case "sectPr":
		return r.sectPr(dec)
	default:
		// w:del and w:moveFrom (what a tracked change removed), w:sdtPr,
		// bookmarks, …
		return dec.Skip()
	}
	return nil
}

// sdt reads a content control with content, which consumes its
// w:sdtContent, unless the control shows its placeholder prompt ("Click
// or tap here to enter text.") instead of content.
func (r *docxReader) sdt(dec *xml.Decoder, content func() error) error {
	placeholder := false
	return eachChild(dec, func(t xml.StartElement) error {
		if !isW(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "sdtPr":
			return eachChild(dec, func(t xml.StartElement) error {
				if isW(t.Name) && t.Name.Local == "showingPlcHdr" && onOff(t) {
					placeholder = true
				}
				return dec.Skip()
			})
		case "sdtContent":
			if placeholder {
				return dec.Skip()
			}
			return content()
		}
		return dec.Skip()
	})
}

// sectPr collects the header and footer references of a section.
func (r *docxReader) sectPr(dec *xml.Decoder) error {
	return eachChild(dec, func(t xml.StartElement) error {
		if isW(t.Name) {
			switch t.Name.Local {
			case "headerReference":
				r.headerRefs = append(r.headerRefs, relAttr(t, "id"))
			case "footerReference":
				r.footerRefs = append(r.footerRefs, relAttr(t, "id"))
			}
		}
		return dec.Skip()
	})
}

// paraProps are a paragraph's own properties.
type paraProps struct {
	styleID           string
	numID             string
	ilvl              int
	hasNumID, hasIlvl bool
	outline           int
	hasOutline        bool
}

// paragraph reads a w:p; after holds the text boxes anchored in it, which
// follow it in reading order.
func (r *docxReader) paragraph(dec *xml.Decoder) (*para, []block, error) {
	if err := r.ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := r.enter(); err != nil {
		return nil, nil, err
	}
	defer r.leave()
	p := &para{}
	var props paraProps
	var after []block
	err := eachChild(dec, func(t xml.StartElement) error {
		if isW(t.Name) && t.Name.Local == "pPr" {
			return r.paraProps(dec, &props)
		}
		return r.inlineElement(dec, t, p, "", &after)
	})
	if err != nil {
		return nil, nil, err
	}
	r.classify(p, props)
	return p, after, nil
}

func (r *docxReader) paraProps(dec *xml.Decoder, props *paraProps) error {
	var read func(t xml.StartElement) error
	read = func(t xml.StartElement) error {
		if !isW(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "pStyle":
			props.styleID = attr(t, "val")
		case "outlineLvl":
			if n, err := strconv.Atoi(attr(t, "val")); err == nil {
				props.outline, props.hasOutline = n, true
			}
		case "numPr":
			return eachChild(dec, read)
		case "ilvl":
			if n, err := strconv.Atoi(attr(t, "val")); err == nil {
				props.ilvl, props.hasIlvl = n, true
			}
		case "numId":
			props.numID, props.hasNumID = attr(t, "val"), true
		case "sectPr":
			// A section break: the section ends with this paragraph.
			return r.sectPr(dec)
		}
		return dec.Skip()
	}
	return eachChild(dec, read)
}

// classify decides whether a paragraph is a heading or a list item, from
// its own properties, then its style's.
func (r *docxReader) classify(p *para, props paraProps) {
	if props.hasOutline {
		p.heading = outlineHeading(props.outline)
	} else {
		p.heading = styleHeading(r.styles, props.styleID)
	}
	if p.heading > 0 {
		return
	}
	numID, ilvl := props.numID, props.ilvl
	if !props.hasNumID {
		var ok bool
		var styleIlvl int
		if numID, styleIlvl, ok = styleNumbering(r.styles, props.styleID); !ok {
			return
		}
		if !props.hasIlvl {
			ilvl = styleIlvl
		}
	}
	if numID == "" || numID == "0" || r.numbering == nil {
		return
	}
	ilvl = min(max(ilvl, 0), 8)
	lvl, ok := r.numbering.level(r.styles, numID, ilvl)
	if !ok || lvl.format == "none" {
		return
	}
	cs := r.counters[lvl.list]
	if cs == nil {
		cs = &listCounters{}
		r.counters[lvl.list] = cs
	}
	restart := false
	if lvl.restart {
		key := numID + "/" + strconv.Itoa(ilvl)
		restart = !r.restarted[key]
		r.restarted[key] = true
	}
	if cs.started[ilvl] && !restart {
		cs.n[ilvl]++
	} else {
		cs.n[ilvl], cs.started[ilvl] = lvl.start, true
	}
	// A deeper level starts again after an item above it.
	for k := ilvl + 1; k < len(cs.n); k++ {
		cs.started[k] = false
	}
	p.list = &listItem{level: ilvl, ordered: lvl.format != "bullet", number: cs.n[ilvl]}
}

// inlineElement reads one element of paragraph content into p.
func (r *docxReader) inlineElement(dec *xml.Decoder, t xml.StartElement, p *para, link string, after *[]block) error {
	if isAlternate(t) {
		return readAlternate(dec, func() error { return r.inline(dec, p, link, after) })
	}
	if isM(t.Name) && (t.Name.Local == "oMath" || t.Name.Local == "oMathPara") {
		return mathText(dec, p)
	}
	if !isW(t.Name) {
		return dec.Skip()
	}
	switch t.Name.Local {
	case "r":
		return r.run(dec, p, link, after)
	case "hyperlink":
		// Internal anchors (w:anchor) keep their text only.
		target := ""
		if rl, ok := r.rels[relAttr(t, "id")]; ok && rl.External {
			target = safeLink(rl.Target)
		}
		return r.inline(dec, p, target, after)
	case "sdt":
		return r.sdt(dec, func() error { return r.inline(dec, p, link, after) })
	case "ins", "moveTo", "smartTag", "customXml", "sdtContent", "fldSimple", "dir", "bdo":
		return r.inline(dec, p, link, after)
	default:
		// w:del, w:moveFrom, w:sdtPr, comments, bookmarks, proofing marks, …
		return dec.Skip()
	}
}

// inline reads paragraph content: the children of the current element.
func (r *docxReader) inline(dec *xml.Decoder, p *para, link string, after *[]block) error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.leave()
	return eachChild(dec, func(t xml.StartElement) error { return r.inlineElement(dec, t, p, link, after) })
}

// runFormat is the formatting of one run.
type runFormat struct {
	bold, italic, strike, hidden bool
}

// newlines are line ends inside text, which are white space.
var newlines = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// run reads a w:r.
func (r *docxReader) run(dec *xml.Decoder, p *para, link string, after *[]block) error {
	var f runFormat
	add := func(s span) {
		if f.hidden || (s.text == "" && !s.lineBreak) {
			return
		}
		s.bold, s.italic, s.strike, s.link = f.bold, f.italic, f.strike, link
		p.spans = append(p.spans, s)
	}
	var content func(t xml.StartElement) error
	content = func(t xml.StartElement) error {
		if isAlternate(t) {
			return readAlternate(dec, func() error { return eachChild(dec, content) })
		}
		if !isW(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "rPr":
			var err error
			f, err = runProps(dec)
			return err
		case "t":
			text, err := charData(dec)
			add(span{text: newlines.Replace(text)})
			return err
		case "tab", "ptab":
			add(span{text: "\t"})
		case "br", "cr":
			add(span{lineBreak: true})
		case "noBreakHyphen":
			add(span{text: "-"})
		case "footnoteReference", "endnoteReference":
			key := noteKey{endnote: t.Name.Local == "endnoteReference", id: attr(t, "id")}
			n, ok := r.notes[key]
			if !ok {
				n = len(r.noteOrder) + 1
				r.notes[key] = n
				r.noteOrder = append(r.noteOrder, key)
			}
			add(span{text: "[^" + strconv.Itoa(n) + "]", raw: true})
		case "fldChar":
			box, err := checkbox(dec)
			add(span{text: box})
			return err
		case "drawing", "pict", "object":
			var alts []string
			err := r.textBoxes(dec, after, &alts)
			for _, alt := range alts {
				add(span{text: imageMarkdown(alt), raw: true})
			}
			return err
		case "sym":
			add(span{text: symbolGlyph(attr(t, "font"), attr(t, "char"))})
		case "ruby":
			// Phonetic guide (furigana): the base text is the text; the
			// reading above it (w:rt) would repeat the word in kana.
			return eachChild(dec, func(t xml.StartElement) error {
				if isW(t.Name) && t.Name.Local == "rubyBase" {
					return r.inline(dec, p, link, after)
				}
				return dec.Skip()
			})
		}
		// Skipped: w:delText and w:instrText (not shown), w:sym glyphs
		// other than check marks and boxes (symbolGlyph), w:softHyphen,
		// w:lastRenderedPageBreak, …
		return dec.Skip()
	}
	return eachChild(dec, content)
}

// runProps reads a w:rPr.
func runProps(dec *xml.Decoder) (runFormat, error) {
	var f runFormat
	err := eachChild(dec, func(t xml.StartElement) error {
		if isW(t.Name) {
			switch t.Name.Local {
			case "b":
				f.bold = onOff(t)
			case "i":
				f.italic = onOff(t)
			case "strike", "dstrike":
				f.strike = onOff(t)
			case "vanish":
				f.hidden = onOff(t)
			}
		}
		return dec.Skip()
	})
	return f, err
}

// charData reads the text of the current element.
func charData(dec *xml.Decoder) (string, error) {
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			b.Write(t)
		case xml.StartElement:
			if err := dec.Skip(); err != nil {
				return "", err
			}
		case xml.EndElement:
			return b.String(), nil
		}
	}
}

// checkbox reads a w:fldChar: a legacy form checkbox shows as ☐ or ☒,
// anything else as nothing.
func checkbox(dec *xml.Decoder) (string, error) {
	isBox, checked, explicit := false, false, false
	var read func(t xml.StartElement) error
	read = func(t xml.StartElement) error {
		if isW(t.Name) {
			switch t.Name.Local {
			case "ffData":
				return eachChild(dec, read)
			case "checkBox":
				isBox = true
				return eachChild(dec, read)
			case "default":
				if !explicit {
					checked = onOff(t)
				}
			case "checked":
				checked, explicit = onOff(t), true
			}
		}
		return dec.Skip()
	}
	if err := eachChild(dec, read); err != nil || !isBox {
		return "", err
	}
	if checked {
		return "☒", nil
	}
	return "☐", nil
}

// textBoxes finds the text boxes in a drawing and reads their content,
// and collects the alternative text of its pictures and shapes into alts:
// wp:docPr descr (DrawingML) and v:shape alt (VML). Alt text is often all
// a picture says to a text reader (a logo's company name, a chart's
// figures), and the HTML reader keeps <img alt> too.
func (r *docxReader) textBoxes(dec *xml.Decoder, after *[]block, alts *[]string) error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.leave()
	return eachChild(dec, func(t xml.StartElement) error {
		switch {
		case isW(t.Name) && t.Name.Local == "txbxContent":
			bs, err := r.blocks(dec)
			*after = append(*after, bs...)
			return err
		case isAlternate(t):
			return readAlternate(dec, func() error { return r.textBoxes(dec, after, alts) })
		case t.Name.Space == nsWP && t.Name.Local == "docPr", t.Name.Space == nsV && t.Name.Local == "shape":
			alt := attr(t, "descr")
			if t.Name.Space == nsV {
				alt = attr(t, "alt")
			}
			if strings.TrimSpace(alt) != "" {
				*alts = append(*alts, alt)
			}
			return r.textBoxes(dec, after, alts)
		default:
			return r.textBoxes(dec, after, alts)
		}
	})
}

// symbolGlyphs are the symbol-font characters of forms, by font and
// w:char code (the font's private-use code point, F0xx, or its low byte):
// check marks and ballot boxes. Other symbol glyphs stay dropped: a
// private-use code point is no character, and mapping whole fonts would
// guess at pictures.
var symbolGlyphs = map[string]map[uint16]string{
	"wingdings": {
		0xFC: "✓", 0xFB: "✗", 0xFD: "☒", 0xFE: "☑", 0xA8: "☐", 0x6F: "☐", 0x71: "☐", 0x78: "☒",
	},
	"wingdings 2": {
		0x50: "✓", 0x4F: "✗", 0x52: "☑", 0x53: "☒", 0xA3: "☐", 0x54: "☒",
	},
	"symbol": {
		0xD6: "√",
	},
}

// symbolGlyph is the character a w:sym shows, or "" when it is not one of
// symbolGlyphs.
func symbolGlyph(font, char string) string {
	code, err := strconv.ParseUint(char, 16, 16)
	if err != nil {
		return ""
	}
	if code >= 0xF000 {
		code -= 0xF000
	}
	return symbolGlyphs[strings.ToLower(strings.TrimSpace(font))][uint16(code)]
}

// mathText reads the text of an Office Math zone.
func mathText(dec *xml.Decoder, p *para) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if (isM(t.Name) || isW(t.Name)) && t.Name.Local == "t" {
				text, err := charData(dec)
				if err != nil {
					return err
				}
				p.spans = append(p.spans, span{text: text})
				continue
			}
			depth++
		case xml.EndElement:
			if depth == 0 {
				return nil
			}
			depth--
		}
	}
}

// maxSpan bounds a cell's column span: Word tables have at most 63
// columns, and a hostile span must not make thousands of empty cells.
const maxSpan = 64

// table reads a w:tbl.
func (r *docxReader) table(dec *xml.Decoder) (*table, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.leave()
	tb := &table{}
	// Once a row is past the budget the rest are too, as the renderer
	// cuts a table: a narrower row after it must not come up out of order.
	cut := false
	var rows func(t xml.StartElement) error
	rows = func(t xml.StartElement) error {
		if !isW(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "tr":
			row, deleted, over, err := r.row(dec)
			switch {
			case err != nil || deleted:
			case over || cut:
				tb.omitted++
				cut = true
			default:
				tb.rows = append(tb.rows, row)
			}
			return err
		case "sdt", "sdtContent", "customXml", "ins", "moveTo":
			return eachChild(dec, rows)
		}
		return dec.Skip()
	}
	return tb, eachChild(dec, rows)
}

// row reads a w:tr; deleted reports a row a tracked change removed. A row
// that starts at a later column of the table's grid (w:gridBefore: a
// totals row under the amount columns, a form's indented line) gets that
// many empty cells first, so that its cells stay under their columns.
//
// over reports a row past the document's cell budget, which is read to
// its end but not kept: the renderer, which charges at least a row's own
// cells, would leave it out anyway, and spans make cells of a few bytes
// of XML (a 63 MB table of one-cell rows spanning 64 columns held 2.4 GB
// before anything was rendered).
func (r *docxReader) row(dec *xml.Decoder) (row []cell, deleted, over bool, err error) {
	before := 0
	keep := func(c cell, span int) {
		if over || r.cells+len(row)+before+span > r.maxCells {
			over = true
			return
		}
		row = append(row, c)
		for i := 1; i < span; i++ {
			row = append(row, cell{})
		}
	}
	var cells func(t xml.StartElement) error
	cells = func(t xml.StartElement) error {
		if !isW(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "trPr":
			return eachChild(dec, func(t xml.StartElement) error {
				if isW(t.Name) {
					switch t.Name.Local {
					case "del":
						deleted = true
					case "gridBefore":
						if n, err := strconv.Atoi(attr(t, "val")); err == nil {
							before = min(max(n, 0), maxSpan)
						}
					}
				}
				return dec.Skip()
			})
		case "tc":
			c, span, err := r.cell(dec)
			keep(c, span)
			return err
		case "sdt", "sdtContent", "customXml", "ins", "moveTo":
			return eachChild(dec, cells)
		}
		return dec.Skip()
	}
	err = eachChild(dec, cells)
	if over || deleted {
		return nil, deleted, over, err
	}
	if before > 0 && len(row) > 0 {
		row = append(make([]cell, before, before+len(row)), row...)
	}
	r.cells += len(row)
	return row, deleted, false, err
}

// cell reads a w:tc and its column span. A cell continuing a merge is
// empty: the merge shows its content once.
func (r *docxReader) cell(dec *xml.Decoder) (cell, int, error) {
	var c cell
	span, merged := 1, false
	err := eachChild(dec, func(t xml.StartElement) error {
		if !isW(t.Name) || t.Name.Local != "tcPr" {
			return r.blockElement(dec, t, &c.blocks)
		}
		return eachChild(dec, func(t xml.StartElement) error {
			if isW(t.Name) {
				switch t.Name.Local {
				case "gridSpan":
					if n, err := strconv.Atoi(attr(t, "val")); err == nil {
						span = min(max(n, 1), maxSpan)
					}
				case "vMerge", "hMerge":
					// No value, or "continue", continues a merge.
					v := attr(t, "val")
					merged = v == "" || v == "continue"
				}
			}
			return dec.Skip()
		})
	})
	if merged {
		c.blocks = nil
	}
	return c, span, err
}

// noteDefinitions renders the referenced footnotes and endnotes as
// markdown footnote definitions, in the order they are referenced.
func (r *docxReader) noteDefinitions(footnotesPart, endnotesPart string, rd *renderer) (string, error) {
	if len(r.noteOrder) == 0 {
		return "", nil
	}
	texts := map[noteKey]string{}
	for _, src := range []struct {
		part    string
		endnote bool
	}{{footnotesPart, false}, {endnotesPart, true}} {
		if src.part == "" || !r.a.has(src.part) {
			continue
		}
		if err := r.readNotes(src.part, src.endnote, texts); err != nil {
			return "", err
		}
	}
	w := rd.writer()
	for i, key := range r.noteOrder {
		if t := texts[key]; t != "" {
			if !w.line(fmt.Sprintf("[^%d]: %s", i+1, t)) {
				break
			}
		}
	}
	return w.String(), nil
}

// readNotes reads the referenced notes of a footnotes or endnotes part,
// each flattened to one line.
func (r *docxReader) readNotes(part string, endnote bool, texts map[noteKey]string) error {
	rels, _, err := r.a.rels(part)
	if err != nil {
		return err
	}
	rc, err := r.a.open(part)
	if err != nil {
		return err
	}
	defer rc.Close()
	r.rels = rels
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return r.a.readErr(part, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || !isW(se.Name) || (se.Name.Local != "footnote" && se.Name.Local != "endnote") {
			continue
		}
		key := noteKey{endnote: endnote, id: attr(se, "id")}
		if _, referenced := r.notes[key]; !referenced {
			if err := dec.Skip(); err != nil {
				return r.a.readErr(part, err)
			}
			continue
		}
		bs, err := r.blocks(dec)
		if err != nil {
			return r.a.readErr(part, err)
		}
		var parts []string
		for _, b := range bs {
			if p, ok := b.(*para); ok && !p.empty() {
				parts = append(parts, inlineMarkdown(p.spans, " ", true))
			}
		}
		texts[key] = collapseSpaces(strings.Join(parts, " "))
	}
}
