package pdf

import "unicode/utf8"

// Turned pages. Poppler reads rotated text in its own direction (a table
// set sideways on a portrait page, a page turned upside down) and writes
// its lines in that order, but the boxes stay in the page's frame: lines
// of a sideways table stand side by side and an upside-down line's words
// run right to left. The layout reads rows down the page and words left
// to right, so such a page is turned upright first, when most of its text
// runs one other way; a page of upright text with a turned margin note is
// left as it is.

// Directions text runs in, as poppler numbers them.
const (
	runsRight = iota // upright
	runsDown         // turned a quarter clockwise: lines follow leftwards
	runsLeft         // upside down
	runsUp           // turned a quarter counter-clockwise: lines follow rightwards
)

// turnUpright turns tp so that its dominant text direction, when that is
// not upright and holds most of its characters, becomes upright.
func turnUpright(tp *textPage) {
	var chars [4]int
	total := 0
	for i := 0; i < len(tp.lines); {
		end := i
		for end < len(tp.lines) && tp.lines[end].block == tp.lines[i].block {
			end++
		}
		blk := tp.lines[i:end]
		i = end
		// The block's line order tells the direction of its one-word lines
		// (a table's cells); a line's word order tells its own.
		blockDir := -1
		if len(blk) >= 2 {
			blockDir = lineStep(blk[0], blk[len(blk)-1])
		}
		for _, l := range blk {
			n := 0
			for _, w := range l.words {
				n += utf8.RuneCountInString(w.text)
			}
			total += n
			d := blockDir
			if len(l.words) >= 2 {
				d = wordStep(l.words[0], l.words[len(l.words)-1])
			}
			// A turned line is as tall as it is long: side by side lines
			// of a block, or words stacked in a wide box, tell nothing.
			tall := l.y1-l.y0 > l.x1-l.x0
			if d >= 0 && tall == (d == runsDown || d == runsUp) {
				chars[d] += n
			}
		}
	}
	dir := runsRight
	for d := runsDown; d <= runsUp; d++ {
		if chars[d] > chars[dir] {
			dir = d
		}
	}
	if dir == runsRight || 2*chars[dir] <= total {
		return
	}
	// The frame's far edges: poppler gives the page's size unrotated while
	// a /Rotate page's boxes are in its displayed frame.
	w, h := tp.width, tp.height
	for _, l := range tp.lines {
		w, h = max(w, l.x1), max(h, l.y1)
	}
	turn := func(x0, y0, x1, y1 float64) (float64, float64, float64, float64) {
		switch dir {
		case runsDown:
			return y0, w - x1, y1, w - x0
		case runsLeft:
			return w - x1, h - y1, w - x0, h - y0
		default: // runsUp
			return h - y1, x0, h - y0, x1
		}
	}
	for i := range tp.lines {
		l := &tp.lines[i]
		l.x0, l.y0, l.x1, l.y1 = turn(l.x0, l.y0, l.x1, l.y1)
		for k := range l.words {
			wd := &l.words[k]
			wd.x0, wd.y0, wd.x1, wd.y1 = turn(wd.x0, wd.y0, wd.x1, wd.y1)
		}
	}
	if dir != runsLeft {
		tp.width, tp.height = h, w
	}
}

// wordStep is the direction from word a to a later word b of a line;
// lineStep that from line a to a later line b of a block (lines follow
// down the text, a quarter clockwise from the way it reads). -1: the two
// sit on each other.
func wordStep(a, b word) int {
	return step(b.x0+b.x1-a.x0-a.x1, b.y0+b.y1-a.y0-a.y1)
}

func lineStep(a, b textLine) int {
	d := step(b.x0+b.x1-a.x0-a.x1, b.y0+b.y1-a.y0-a.y1)
	if d < 0 {
		return d
	}
	return (d + 3) % 4 // a step down the page is text running right
}

// step names the dominant axis and sign of (dx, dy) as a direction,
// x to the right and y down the page.
func step(dx, dy float64) int {
	switch {
	case dx == 0 && dy == 0:
		return -1
	case abs(dx) >= abs(dy):
		if dx > 0 {
			return runsRight
		}
		return runsLeft
	case dy > 0:
		return runsDown
	default:
		return runsUp
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
