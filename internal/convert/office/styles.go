package office

import (
	"encoding/xml"
	"io"
	"strconv"
	"strings"
)

// style is what a paragraph style contributes: heading level and list.
type style struct {
	name       string // lower case, as styles.xml names it ("heading 1")
	basedOn    string
	outline    int
	hasOutline bool
	numID      string
	ilvl       int
	hasNum     bool
}

// maxStyleChain bounds basedOn and numbering style links, which a broken
// or hostile file can make circular.
const maxStyleChain = 16

type valAttr struct {
	Val string `xml:"val,attr"`
}

type xmlStyle struct {
	Type    string   `xml:"type,attr"`
	ID      string   `xml:"styleId,attr"`
	Name    *valAttr `xml:"name"`
	BasedOn *valAttr `xml:"basedOn"`
	PPr     struct {
		OutlineLvl *valAttr `xml:"outlineLvl"`
		NumPr      *struct {
			Ilvl  *valAttr `xml:"ilvl"`
			NumID *valAttr `xml:"numId"`
		} `xml:"numPr"`
	} `xml:"pPr"`
}

// readStyles reads the paragraph and numbering styles of styles.xml, by
// style id (numbering styles carry lists that definitions link to). A
// package without styles has none.
func readStyles(a *archive, part string) (map[string]*style, error) {
	styles := map[string]*style{}
	if part == "" || !a.has(part) {
		return styles, nil
	}
	rc, err := a.open(part)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return styles, nil
		}
		if err != nil {
			return nil, a.readErr(part, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || !isW(se.Name) || se.Name.Local != "style" {
			continue
		}
		var xs xmlStyle
		if err := dec.DecodeElement(&xs, &se); err != nil {
			return nil, a.readErr(part, err)
		}
		if xs.Type != "" && xs.Type != "paragraph" && xs.Type != "numbering" {
			continue
		}
		s := &style{outline: -1}
		if xs.Name != nil {
			s.name = strings.ToLower(strings.TrimSpace(xs.Name.Val))
		}
		if xs.BasedOn != nil {
			s.basedOn = xs.BasedOn.Val
		}
		if xs.PPr.OutlineLvl != nil {
			if n, err := strconv.Atoi(xs.PPr.OutlineLvl.Val); err == nil {
				s.outline, s.hasOutline = n, true
			}
		}
		if np := xs.PPr.NumPr; np != nil && np.NumID != nil {
			s.numID, s.hasNum = np.NumID.Val, true
			if np.Ilvl != nil {
				s.ilvl, _ = strconv.Atoi(np.Ilvl.Val)
			}
		}
		if _, dup := styles[xs.ID]; !dup {
			styles[xs.ID] = s
		}
	}
}

// outlineHeading maps an outline level (0-based; 9 is body text) to a
// heading level.
func outlineHeading(level int) int {
	if level < 0 || level >= 9 {
		return 0
	}
	return min(level+1, 6)
}

// styleHeading is the heading level a paragraph style gives, following
// basedOn: built-in names ("heading 2", "title") are English whatever the
// interface language, so they are matched first, then the style id, then
// an outline level in the style.
func styleHeading(styles map[string]*style, id string) int {
	for range maxStyleChain {
		if id == "" {
			return 0
		}
		s := styles[id]
		if s == nil {
			// Without styles.xml the id is all there is.
			return headingName(strings.ToLower(id))
		}
		if n := headingName(s.name); n > 0 {
			return n
		}
		if s.name == "" {
			if n := headingName(strings.ToLower(id)); n > 0 {
				return n
			}
		}
		if s.hasOutline {
			return outlineHeading(s.outline)
		}
		id = s.basedOn
	}
	return 0
}

// headingName reads "heading 3", "heading3" or "title".
func headingName(name string) int {
	if name == "title" {
		return 1
	}
	rest, ok := strings.CutPrefix(name, "heading")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil || n < 1 || n > 9 {
		return 0
	}
	return min(n, 6)
}

// styleNumbering is the list a paragraph style puts its paragraphs in.
func styleNumbering(styles map[string]*style, id string) (numID string, ilvl int, ok bool) {
	for range maxStyleChain {
		s := styles[id]
		if s == nil {
			return "", 0, false
		}
		if s.hasNum {
			return s.numID, s.ilvl, true
		}
		id = s.basedOn
	}
	return "", 0, false
}

// numbering is numbering.xml: list instances and their abstract definitions.
type numbering struct {
	nums      map[string]xmlNum
	abstracts map[string]xmlAbstractNum
}

type xmlLvl struct {
	Ilvl   string   `xml:"ilvl,attr"`
	NumFmt *valAttr `xml:"numFmt"`
	Start  *valAttr `xml:"start"`
}

type xmlAbstractNum struct {
	ID           string   `xml:"abstractNumId,attr"`
	Levels       []xmlLvl `xml:"lvl"`
	NumStyleLink *valAttr `xml:"numStyleLink"`
}

type xmlNum struct {
	ID            string   `xml:"numId,attr"`
	AbstractNumID *valAttr `xml:"abstractNumId"`
	Overrides     []struct {
		Ilvl          string   `xml:"ilvl,attr"`
		StartOverride *valAttr `xml:"startOverride"`
		Lvl           *xmlLvl  `xml:"lvl"`
	} `xml:"lvlOverride"`
}

// maxLevels bounds the levels read per definition (Word uses 9).
const maxLevels = 9

func readNumbering(a *archive, part string) (*numbering, error) {
	if part == "" || !a.has(part) {
		return nil, nil
	}
	rc, err := a.open(part)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	n := &numbering{nums: map[string]xmlNum{}, abstracts: map[string]xmlAbstractNum{}}
	dec := newXMLDecoder(rc)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return nil, a.readErr(part, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || !isW(se.Name) {
			continue
		}
		switch se.Name.Local {
		case "abstractNum":
			var x xmlAbstractNum
			if err := dec.DecodeElement(&x, &se); err != nil {
				return nil, a.readErr(part, err)
			}
			if len(x.Levels) > maxLevels {
				x.Levels = x.Levels[:maxLevels]
			}
			n.abstracts[x.ID] = x
		case "num":
			var x xmlNum
			if err := dec.DecodeElement(&x, &se); err != nil {
				return nil, a.readErr(part, err)
			}
			if len(x.Overrides) > maxLevels {
				x.Overrides = x.Overrides[:maxLevels]
			}
			n.nums[x.ID] = x
		}
	}
}

// level is one list level as a paragraph sees it.
type level struct {
	format string // numFmt: "bullet", "decimal", "lowerLetter", "none", …
	start  int
	// list names the count the paragraph's number continues: Word counts
	// the instances (w:num) of one abstract definition as one list, so a
	// second instance goes on where the first left off…
	list string
	// …unless the instance overrides the level's start, which restarts
	// the count at its first paragraph of that level.
	restart bool
}

// level resolves numbering instance numID at ilvl: overrides first, then
// the abstract definition, following a numbering-style link.
func (n *numbering) level(styles map[string]*style, numID string, ilvl int) (level, bool) {
	want := strconv.Itoa(ilvl)
	lv := level{format: "decimal", start: 1, list: "num " + numID}
	if num, ok := n.nums[numID]; ok && num.AbstractNumID != nil {
		lv.list = "abstract " + num.AbstractNumID.Val
	}
	startOverridden := false
	for hop := range maxStyleChain {
		num, ok := n.nums[numID]
		if !ok {
			return lv, false
		}
		for _, o := range num.Overrides {
			if o.Ilvl != want {
				continue
			}
			if o.StartOverride != nil && !startOverridden {
				if s, err := strconv.Atoi(o.StartOverride.Val); err == nil {
					lv.start, startOverridden = s, true
					lv.restart = hop == 0
				}
			}
			if o.Lvl != nil && o.Lvl.NumFmt != nil {
				lv.format = o.Lvl.NumFmt.Val
				if !startOverridden && o.Lvl.Start != nil {
					lv.start, _ = strconv.Atoi(o.Lvl.Start.Val)
					lv.restart = hop == 0
				}
				return lv, true
			}
		}
		if num.AbstractNumID == nil {
			return lv, false
		}
		abs, ok := n.abstracts[num.AbstractNumID.Val]
		if !ok {
			return lv, false
		}
		if abs.NumStyleLink != nil {
			// The definition lives with the numbering style's list.
			s := styles[abs.NumStyleLink.Val]
			if s == nil || !s.hasNum || s.numID == numID {
				return lv, false
			}
			numID = s.numID
			continue
		}
		for _, l := range abs.Levels {
			if l.Ilvl != want {
				continue
			}
			if l.NumFmt != nil {
				lv.format = l.NumFmt.Val
			}
			if !startOverridden && l.Start != nil {
				if s, err := strconv.Atoi(l.Start.Val); err == nil {
					lv.start = s
				}
			}
			return lv, true
		}
		return lv, false
	}
	return lv, false
}
