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

// pptxMarkdown reads a PresentationML package: each slide in presentation
// order as "## Slide N: title", its text, tables and speaker notes.
func pptxMarkdown(ctx context.Context, cfg Config, data []byte) (string, error) {
	a, err := openArchive(data, "PPTX", cfg)
	if err != nil {
		return "", err
	}
	main, err := a.mainPart()
	if err != nil {
		return "", err
	}
	presRels, _, err := a.rels(main)
	if err != nil {
		return "", err
	}
	ids, err := slideIDs(a, main)
	if err != nil {
		return "", err
	}
	rd := newRenderer(cfg)
	w := rd.writer()
	n := 0
	for _, id := range ids {
		rl, ok := presRels[id]
		if !ok || rl.External || !relType(rl.Type, "slide") || !a.has(rl.Target) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n++
		s, err := readSlide(a, rl.Target)
		if err != nil {
			return "", err
		}
		if !s.render(n, w) {
			break
		}
	}
	return joinSections([]string{w.String(), rd.truncationNote()}), nil
}

// slideIDs lists the slides' relationship ids in presentation order.
func slideIDs(a *archive, main string) ([]string, error) {
	rc, err := a.open(main)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	dec := newXMLDecoder(rc)
	var ids []string
	inList := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return ids, nil
		}
		if err != nil {
			return nil, a.readErr(main, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if !isP(t.Name) {
				continue
			}
			switch t.Name.Local {
			case "sldIdLst":
				inList = true
			case "sldId":
				if inList {
					ids = append(ids, relAttr(t, "id"))
				}
			}
		case xml.EndElement:
			if isP(t.Name) && t.Name.Local == "sldIdLst" {
				// The rest (text styles, extensions) is of no interest.
				return ids, nil
			}
		}
	}
}

// slide is one slide's content.
type slide struct {
	title  string
	blocks []block
	notes  []block
}

// render writes the slide: a heading naming it, its text and tables,
// and its notes under a heading of their own.
func (s *slide) render(n int, w *mdWriter) bool {
	title := fmt.Sprintf("Slide %d", n)
	if s.title != "" {
		title += ": " + s.title
	}
	if !w.add(&para{heading: 2, spans: []span{{text: title, raw: true}}}) {
		return false
	}
	for _, b := range s.blocks {
		if !w.add(b) {
			return false
		}
	}
	if !hasText(s.notes) {
		return true
	}
	if !w.add(&para{heading: 3, spans: []span{{text: "Notes", raw: true}}}) {
		return false
	}
	for _, b := range s.notes {
		if !w.add(b) {
			return false
		}
	}
	return true
}

// pptxReader reads the shapes of one slide or notes part.
type pptxReader struct {
	a     *archive
	rels  map[string]rel
	depth int
	notes bool // reading a notes page: only its body placeholder counts
	title string
	// titleFound is set once a title placeholder has been read.
	titleFound bool
	blocks     []block
}

func readSlide(a *archive, part string) (*slide, error) {
	rels, list, err := a.rels(part)
	if err != nil {
		return nil, err
	}
	r := &pptxReader{a: a, rels: rels}
	if err := r.read(part); err != nil {
		return nil, err
	}
	s := &slide{title: r.title, blocks: r.blocks}
	for _, rl := range list {
		if rl.External || !relType(rl.Type, "notesSlide") || !a.has(rl.Target) {
			continue
		}
		nrels, _, err := a.rels(rl.Target)
		if err != nil {
			return nil, err
		}
		nr := &pptxReader{a: a, rels: nrels, notes: true}
		if err := nr.read(rl.Target); err != nil {
			return nil, err
		}
		s.notes = nr.blocks
		break
	}
	return s, nil
}

// read reads the shape tree of part.
func (r *pptxReader) read(part string) error {
	rc, err := r.a.open(part)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return invalidError(r.a.doc, nil, "part %s is missing", part)
		}
		return err
	}
	defer rc.Close()
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return r.a.readErr(part, err)
		}
		if se, ok := tok.(xml.StartElement); ok && isP(se.Name) && se.Name.Local == "spTree" {
			if err := r.shapes(dec); err != nil {
				return r.a.readErr(part, err)
			}
			return nil
		}
	}
}

func (r *pptxReader) enter() error {
	r.depth++
	if r.depth > maxDepth {
		return invalidError(r.a.doc, nil, "its elements nest more than %d deep", maxDepth)
	}
	return nil
}

func (r *pptxReader) leave() { r.depth-- }

// shapes reads a shape tree or group, in document order.
func (r *pptxReader) shapes(dec *xml.Decoder) error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.leave()
	return eachChild(dec, func(t xml.StartElement) error {
		switch {
		case isAlternate(t):
			return readAlternate(dec, func() error { return r.shapes(dec) })
		case isP(t.Name) && t.Name.Local == "sp":
			return r.shape(dec)
		case isP(t.Name) && t.Name.Local == "grpSp":
			return r.shapes(dec)
		case isP(t.Name) && t.Name.Local == "graphicFrame" && !r.notes:
			return r.graphicFrame(dec)
		case isP(t.Name) && t.Name.Local == "pic" && !r.notes:
			return r.picture(dec)
		}
		// Connectors, group properties, …
		return dec.Skip()
	})
}

// picture reads a p:pic: its alternative text (p:cNvPr descr), which is
// often all a picture says to a text reader, becomes an image line as in
// DOCX. A picture without one says nothing.
func (r *pptxReader) picture(dec *xml.Decoder) error {
	alt := ""
	var read func(t xml.StartElement) error
	read = func(t xml.StartElement) error {
		switch {
		case isP(t.Name) && t.Name.Local == "nvPicPr":
			return eachChild(dec, read)
		case isP(t.Name) && t.Name.Local == "cNvPr":
			alt = attr(t, "descr")
		}
		return dec.Skip()
	}
	if err := eachChild(dec, read); err != nil {
		return err
	}
	if strings.TrimSpace(alt) != "" {
		r.blocks = append(r.blocks, &para{spans: []span{{text: imageMarkdown(alt), raw: true}}})
	}
	return nil
}

// shape reads a p:sp: its placeholder kind and its text.
func (r *pptxReader) shape(dec *xml.Decoder) error {
	phType, isPlaceholder := "", false
	var paras []*para
	err := eachChild(dec, func(t xml.StartElement) error {
		var err error
		switch {
		case isP(t.Name) && t.Name.Local == "nvSpPr":
			phType, isPlaceholder, err = placeholder(dec)
		case isP(t.Name) && t.Name.Local == "txBody":
			// Body and content placeholders inherit bullets from the
			// master; text boxes do not.
			bullets := isPlaceholder && (phType == "" || phType == "body" || phType == "obj") && !r.notes
			paras, err = r.textBody(dec, bullets)
		default:
			err = dec.Skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	r.addShape(phType, isPlaceholder, paras)
	return nil
}

func (r *pptxReader) addShape(phType string, isPlaceholder bool, paras []*para) {
	if r.notes {
		// A notes page holds the slide image, the notes body and header,
		// footer, date and number placeholders; only the body is notes.
		if !isPlaceholder || phType != "body" {
			return
		}
	}
	switch phType {
	case "title", "ctrTitle":
		if !r.notes && !r.titleFound {
			var parts []string
			for _, p := range paras {
				if t := headingText(p.spans); t != "" {
					parts = append(parts, t)
				}
			}
			if len(parts) > 0 {
				r.title, r.titleFound = strings.Join(parts, " "), true
				return
			}
		}
	case "sldNum", "dt":
		// Slide numbers and dates repeat on every slide and say nothing.
		return
	}
	for _, p := range paras {
		r.blocks = append(r.blocks, p)
	}
}

// placeholder reads p:nvSpPr for the shape's placeholder type. A
// placeholder without a type is an object (content) placeholder.
func placeholder(dec *xml.Decoder) (phType string, ok bool, err error) {
	var read func(t xml.StartElement) error
	read = func(t xml.StartElement) error {
		switch {
		case isP(t.Name) && t.Name.Local == "nvPr":
			return eachChild(dec, read)
		case isP(t.Name) && t.Name.Local == "ph":
			phType, ok = attr(t, "type"), true
		}
		return dec.Skip()
	}
	err = eachChild(dec, read)
	return phType, ok, err
}

// textBody reads a txBody's paragraphs. bullets says whether paragraphs
// without bullet properties of their own are bulleted.
func (r *pptxReader) textBody(dec *xml.Decoder, bullets bool) ([]*para, error) {
	var paras []*para
	var counters [9]int
	var started [9]bool
	err := eachChild(dec, func(t xml.StartElement) error {
		if !isA(t.Name) || t.Name.Local != "p" {
			return dec.Skip()
		}
		p, bu, err := r.paragraph(dec)
		if err != nil {
			return err
		}
		paras = append(paras, p)
		kind := bu.kind
		if kind == "" && bullets {
			kind = "char"
		}
		if kind != "char" && kind != "autoNum" {
			// A paragraph outside the list restarts its numbering.
			started = [9]bool{}
			return nil
		}
		if p.empty() {
			return nil
		}
		l := bu.level
		item := &listItem{level: l, ordered: kind == "autoNum"}
		if item.ordered {
			if started[l] {
				counters[l]++
			} else {
				counters[l], started[l] = bu.start, true
			}
			item.number = counters[l]
		}
		for k := l + 1; k < len(started); k++ {
			started[k] = false
		}
		p.list = item
		return nil
	})
	return paras, err
}

// bullet is a DrawingML paragraph's list properties.
type bullet struct {
	kind  string // "char", "autoNum", "none", or "" when not set
	level int
	start int
}

// paragraph reads an a:p.
func (r *pptxReader) paragraph(dec *xml.Decoder) (*para, bullet, error) {
	p := &para{}
	bu := bullet{start: 1}
	err := eachChild(dec, func(t xml.StartElement) error {
		if !isA(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "pPr":
			if n, err := strconv.Atoi(attr(t, "lvl")); err == nil {
				bu.level = min(max(n, 0), 8)
			}
			return paraBullet(dec, &bu)
		case "r", "fld":
			return r.run(dec, p)
		case "br":
			p.spans = append(p.spans, span{lineBreak: true})
		}
		return dec.Skip()
	})
	return p, bu, err
}

func paraBullet(dec *xml.Decoder, bu *bullet) error {
	return eachChild(dec, func(t xml.StartElement) error {
		if isA(t.Name) {
			switch t.Name.Local {
			case "buNone":
				bu.kind = "none"
			case "buChar", "buBlip":
				bu.kind = "char"
			case "buAutoNum":
				bu.kind = "autoNum"
				if n, err := strconv.Atoi(attr(t, "startAt")); err == nil {
					bu.start = n
				}
			}
		}
		return dec.Skip()
	})
}

// run reads an a:r or a:fld.
func (r *pptxReader) run(dec *xml.Decoder, p *para) error {
	var s span
	var text strings.Builder
	err := eachChild(dec, func(t xml.StartElement) error {
		if !isA(t.Name) {
			return dec.Skip()
		}
		switch t.Name.Local {
		case "rPr":
			s.bold = hasAttr(t, "b") && onOffAttr(attr(t, "b"))
			s.italic = hasAttr(t, "i") && onOffAttr(attr(t, "i"))
			s.strike = hasAttr(t, "strike") && attr(t, "strike") != "noStrike"
			var err error
			s.link, err = r.runLink(dec)
			return err
		case "t":
			chunk, err := charData(dec)
			text.WriteString(chunk)
			return err
		}
		return dec.Skip()
	})
	// A vertical tab is PowerPoint's soft line break inside a run.
	s.text = strings.ReplaceAll(newlines.Replace(text.String()), "\v", " ")
	if s.text != "" {
		p.spans = append(p.spans, s)
	}
	return err
}

func onOffAttr(v string) bool {
	switch strings.ToLower(v) {
	case "0", "false", "off":
		return false
	}
	return true
}

// runLink reads an a:rPr for its click hyperlink.
func (r *pptxReader) runLink(dec *xml.Decoder) (string, error) {
	link := ""
	err := eachChild(dec, func(t xml.StartElement) error {
		if isA(t.Name) && t.Name.Local == "hlinkClick" {
			if rl, ok := r.rels[relAttr(t, "id")]; ok && rl.External {
				link = safeLink(rl.Target)
			}
		}
		return dec.Skip()
	})
	return link, err
}

// graphicFrame reads a p:graphicFrame for a table; charts, diagrams and
// embedded objects are skipped.
func (r *pptxReader) graphicFrame(dec *xml.Decoder) error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.leave()
	return eachChild(dec, func(t xml.StartElement) error {
		switch {
		case isA(t.Name) && t.Name.Local == "tbl":
			tb, err := r.table(dec)
			if err == nil {
				r.blocks = append(r.blocks, tb)
			}
			return err
		case isA(t.Name) && (t.Name.Local == "graphic" || t.Name.Local == "graphicData"):
			return r.graphicFrame(dec)
		case isAlternate(t):
			return readAlternate(dec, func() error { return r.graphicFrame(dec) })
		}
		return dec.Skip()
	})
}

// table reads an a:tbl. Cells a merge covers are empty.
func (r *pptxReader) table(dec *xml.Decoder) (*table, error) {
	tb := &table{}
	err := eachChild(dec, func(t xml.StartElement) error {
		if !isA(t.Name) || t.Name.Local != "tr" {
			return dec.Skip()
		}
		var row []cell
		err := eachChild(dec, func(t xml.StartElement) error {
			if !isA(t.Name) || t.Name.Local != "tc" {
				return dec.Skip()
			}
			merged := hasAttr(t, "hMerge") && onOffAttr(attr(t, "hMerge")) ||
				hasAttr(t, "vMerge") && onOffAttr(attr(t, "vMerge"))
			var c cell
			err := eachChild(dec, func(t xml.StartElement) error {
				if !isA(t.Name) || t.Name.Local != "txBody" {
					return dec.Skip()
				}
				paras, err := r.textBody(dec, false)
				for _, p := range paras {
					c.blocks = append(c.blocks, p)
				}
				return err
			})
			if merged {
				c.blocks = nil
			}
			row = append(row, c)
			return err
		})
		tb.rows = append(tb.rows, row)
		return err
	})
	return tb, err
}
