// Package pdf recognizes PDFs: the text layer through poppler becomes
// structured HTML, and pages without a usable text layer are rendered and
// read by the job's OCR provider.
//
// Poppler's tools run as processes (pdfinfo, pdftotext -bbox-layout,
// pdftohtml -xml, pdfimages -list, pdftoppm) under a per-file time budget,
// an address-space limit and output caps, so a hostile file ends as an
// error, never as a hung or exhausted worker. The structure inference
// (layout.go: lines; table.go; order.go: reading order; blocks.go:
// headings, lists, paragraphs) is plain Go over poppler's word boxes and
// font spans.
package pdf

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/docjobs/docjobs/internal/provider"
)

// Config bounds the work on one file.
type Config struct {
	MaxPages int // default 1000
	// Timeout is the per-file budget of poppler work, default 5m. Time spent
	// waiting for the OCR provider is not charged to it (the provider has
	// its own timeouts and retries).
	Timeout         time.Duration
	DPI             int   // page rendering for OCR, default 200
	PageConcurrency int   // pages read by the provider at once, default 4
	MemoryLimit     int64 // address-space limit of each poppler process, default 1 GiB; negative: none
	// Processes, shared by every conversion of a process, bounds the poppler
	// processes running at once; nil: no bound. Waiting for one is not
	// charged to Timeout.
	Processes *Processes
}

// Processes bounds concurrent poppler processes: many files are recognized
// at once because most of their time is spent on providers, but the local
// tools are CPU-bound and gain nothing from outnumbering the cores.
type Processes struct{ sem chan struct{} }

// NewProcesses allows n processes at once (at least one).
func NewProcesses(n int) *Processes {
	return &Processes{sem: make(chan struct{}, max(n, 1))}
}

// acquire waits for a free process slot; release gives it back.
func (p *Processes) acquire(ctx context.Context) (release func(), err error) {
	if p == nil {
		return func() {}, nil
	}
	select {
	case p.sem <- struct{}{}:
		return func() { <-p.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Defaults.
const (
	DefaultMaxPages        = 1000
	DefaultTimeout         = 5 * time.Minute
	DefaultDPI             = 200
	DefaultPageConcurrency = 4
	DefaultMemoryLimit     = 1 << 30
)

func (c Config) withDefaults() Config {
	if c.MaxPages <= 0 {
		c.MaxPages = DefaultMaxPages
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.DPI <= 0 {
		c.DPI = DefaultDPI
	}
	if c.PageConcurrency <= 0 {
		c.PageConcurrency = DefaultPageConcurrency
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	return c
}

// Options are per call.
type Options struct {
	// OCRAlways sends every page to the provider (EXTRACTION_MODE_OCR_ALWAYS);
	// else only pages without a usable text layer go (HYBRID).
	OCRAlways bool
	// Format is "html" (PDF files) or "markdown" (office files rendered to
	// PDF): the format of Result.Content.
	Format string
}

// Result is the recognized document.
type Result struct {
	Content string
	// Model names the methods used: "pdftotext", the OCR model, or both
	// joined with "+".
	Model            string
	Request, RawData string // the provider exchanges of OCR'd pages, redacted
	ProviderCalls    int
	Pages            int
}

// Errors callers may branch on; the messages are fit for an OCR row.
var (
	ErrPasswordProtected = errors.New("the PDF is password-protected")
	ErrDamaged           = errors.New("the PDF is damaged")
	ErrTooManyPages      = errors.New("the PDF has too many pages")
	ErrTimeout           = errors.New("reading the PDF took too long")
	ErrTooComplex        = errors.New("the PDF is too complex to read within the limits")
	ErrNoOCRProvider     = errors.New("the job has no usable OCR provider")
)

// Text layer thresholds. A page reads from its text layer unless the layer
// is mostly unreadable glyphs (fonts without a Unicode map give private-use
// or replacement characters), or it is nearly empty while images cover a
// good part of the page (a scan, perhaps with a stamped page number).
const (
	minGoodShare = 0.6
	scarceChars  = 200
	scanCoverage = 0.3
)

const (
	// batchPages is how many pages one pdftotext/pdftohtml run reads: a
	// long document is held in memory a batch at a time.
	batchPages       = 64
	maxRenderSidePix = 6000 // vision APIs refuse or shrink larger images
)

// Convert recognizes one PDF. ocr may be nil when no page needs it.
func Convert(ctx context.Context, cfg Config, data []byte, opts Options, ocr provider.OCR) (Result, error) {
	cfg = cfg.withDefaults()
	format := opts.Format
	if format == "" {
		format = "html"
	}
	if format != "html" && format != "markdown" {
		return Result{}, fmt.Errorf("pdf: unknown output format %q", opts.Format)
	}
	if len(data) == 0 {
		return Result{}, fmt.Errorf("%w: the file is empty", ErrDamaged)
	}
	src, err := writeSource(data)
	if err != nil {
		return Result{}, err
	}
	defer src.close()

	r := newRunner(cfg, src)
	info, err := r.info(ctx, cfg.MaxPages)
	if err != nil {
		return Result{}, err
	}
	if info.pages <= 0 {
		return Result{}, fmt.Errorf("%w: it has no pages", ErrDamaged)
	}
	if info.pages > cfg.MaxPages {
		return Result{}, fmt.Errorf("%w: %d pages, the limit is %d", ErrTooManyPages, info.pages, cfg.MaxPages)
	}
	c := &conversion{cfg: cfg, opts: opts, format: format, ocr: ocr, r: r, info: info,
		pages: make([]pageOut, info.pages)}
	return c.run(ctx)
}

// pageOut is one page's recognized content.
type pageOut struct {
	content          string
	ocr              bool
	model            string
	request, rawData string
	chars            int // letters and digits of the provider's reading (OCR'd pages)
}

type conversion struct {
	cfg    Config
	opts   Options
	format string
	ocr    provider.OCR
	r      *runner
	info   docInfo
	pages  []pageOut // written by page index only: no lock needed
	calls  atomic.Int64
	// layerChars are, under OCR_ALWAYS, the letters and digits of each
	// page's text layer (by page index; -1 unknown), to note a reading far
	// short of them (see shortOfLayer).
	layerChars []int

	pageTypeOnce sync.Once
	pageType     string // see renderType
}

// MIME types of rendered pages.
const (
	mimeJPEG = "image/jpeg"
	mimePGM  = "image/x-portable-graymap"
)

// renderType is what pages are rendered as for the provider: PGM for one
// that reads it (Tesseract: grey is all it reads, and raw pixels carry no
// JPEG artefacts and cost nothing to encode or decode; DESIGN §2), JPEG
// for every vision vendor. It is decided on the first page that needs the
// provider, since asking may open it.
func (c *conversion) renderType(ctx context.Context) string {
	c.pageTypeOnce.Do(func() {
		c.pageType = mimeJPEG
		if ok, known := provider.Accepts(ctx, c.ocr, mimePGM); ok && known {
			c.pageType = mimePGM
		}
	})
	return c.pageType
}

func (c *conversion) run(parent context.Context) (Result, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
	)
	fail := func(err error) {
		once.Do(func() { firstErr = err; cancel() })
	}
	sem := make(chan struct{}, c.cfg.PageConcurrency)
	// schedule starts the provider on page p once a slot is free; it
	// returns false when the conversion is over.
	schedule := func(p int, why string) bool {
		if c.ocr == nil {
			fail(fmt.Errorf("page %d needs OCR (%s) but %w", p, why, ErrNoOCRProvider))
			return false
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.ocrPage(ctx, p); err != nil {
				fail(err)
			}
		}()
		return true
	}

	n := c.info.pages
	if c.opts.OCRAlways {
		c.layerChars = make([]int, n)
		for i := range c.layerChars {
			c.layerChars[i] = -1
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.countLayerChars(ctx)
		}()
		for p := 1; p <= n; p++ {
			if !schedule(p, "OCR_ALWAYS") {
				break
			}
		}
	} else {
	batches:
		for first := 1; first <= n; first += batchPages {
			need, err := c.textBatch(ctx, first, min(n, first+batchPages-1))
			if err != nil {
				fail(err)
				break
			}
			for _, p := range need {
				if !schedule(p, "no usable text layer") {
					break batches
				}
			}
			if ctx.Err() != nil {
				break
			}
		}
	}
	wg.Wait()
	if firstErr != nil {
		if err := parent.Err(); err != nil {
			return Result{}, err
		}
		return Result{}, firstErr
	}
	if err := parent.Err(); err != nil {
		return Result{}, err
	}
	return c.assemble(), nil
}

// textBatch reads the text layer of pages [first, last], fills in the pages
// it can, and returns the pages that need OCR.
func (c *conversion) textBatch(ctx context.Context, first, last int) ([]int, error) {
	var fonts []byte
	var fontErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		fonts, fontErr = c.r.fontLayer(ctx, first, last)
	}()
	text, err := c.r.textLayer(ctx, first, last)
	<-done
	if err != nil {
		return nil, err
	}
	// Fonts refine headings; without them (pdftohtml failed on a file
	// pdftotext reads) sizes come from line heights and nothing is bold.
	var spans map[int][]span
	switch {
	case fontErr == nil:
		spans = parseFonts(fonts, first)
	case errors.Is(fontErr, ErrTimeout) || ctx.Err() != nil:
		return nil, fontErr
	}

	parsed := parseBBox(text, first)
	byNumber := make(map[int]*textPage, len(parsed))
	for i := range parsed {
		byNumber[parsed[i].number] = &parsed[i]
	}
	var need, scarce []int
	for p := first; p <= last; p++ {
		tp := byNumber[p]
		if tp == nil {
			scarce = append(scarce, p)
			continue
		}
		good, total := textQuality(tp)
		switch {
		case total >= 16 && float64(good) < minGoodShare*float64(total):
			need = append(need, p)
		case good < scarceChars:
			scarce = append(scarce, p)
		default:
			c.textPage(tp, spans[p])
		}
	}
	if len(scarce) > 0 {
		cov, err := c.r.imageCoverage(ctx, scarce[0], scarce[len(scarce)-1], c.info.sizes)
		if err != nil {
			if errors.Is(err, ErrTimeout) || ctx.Err() != nil {
				return nil, err
			}
			cov = nil // unreadable image list: trust the text layer
		}
		for _, p := range scarce {
			if cov[p] >= scanCoverage {
				need = append(need, p)
			} else if tp := byNumber[p]; tp != nil {
				c.textPage(tp, spans[p])
			}
		}
	}
	slices.Sort(need)
	return need, nil
}

// countLayerChars counts the letters and digits of every page's text
// layer, for OCR_ALWAYS, where the layer is not read otherwise. A layer
// that cannot be read leaves its pages unknown: the count only adds a
// note. Characters, not words: poppler makes a word of every glyph of a
// font with vertical metrics, which the engine reads as words.
func (c *conversion) countLayerChars(ctx context.Context) {
	for first := 1; first <= c.info.pages; first += batchPages {
		last := min(c.info.pages, first+batchPages-1)
		text, err := c.r.textLayer(ctx, first, last)
		if err != nil {
			return
		}
		for _, tp := range parseBBox(text, first) {
			if tp.number < first || tp.number > last {
				continue
			}
			n := 0
			for _, l := range tp.lines {
				for _, w := range l.words {
					n += letterCount(w.text, false)
				}
			}
			c.layerChars[tp.number-1] = n
		}
		for p := first; p <= last; p++ {
			if c.layerChars[p-1] < 0 {
				c.layerChars[p-1] = 0 // no text on the page
			}
		}
	}
}

// letterCount counts the letters and digits in text; in HTML, outside its
// tags.
func letterCount(text string, html bool) int {
	n, tag := 0, false
	for _, r := range text {
		switch {
		case html && r == '<':
			tag = true
		case html && r == '>':
			tag = false
		case !tag && (unicode.IsLetter(r) || unicode.IsNumber(r)):
			n++
		}
	}
	return n
}

func (c *conversion) textPage(tp *textPage, spans []span) {
	applyFonts(tp, spans)
	els := layoutPage(tp)
	var sb strings.Builder
	if c.format == "markdown" {
		renderMarkdown(&sb, els)
	} else {
		renderHTML(&sb, els)
	}
	c.pages[tp.number-1] = pageOut{content: sb.String()}
}

// textQuality counts a page's non-space characters and those that are
// readable text (not private-use, replacement or control characters).
func textQuality(tp *textPage) (good, total int) {
	for _, l := range tp.lines {
		for _, w := range l.words {
			for _, r := range w.text {
				if unicode.IsSpace(r) {
					continue
				}
				total++
				if r == unicode.ReplacementChar || r >= 0xE000 && r <= 0xF8FF || r >= 0xF0000 {
					continue
				}
				if unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S, unicode.M) {
					good++
				}
			}
		}
	}
	return good, total
}

// ocrPage renders page p and has the provider read it.
func (c *conversion) ocrPage(ctx context.Context, p int) error {
	mime := c.renderType(ctx)
	img, err := c.r.render(ctx, p, c.dpi(p), mime == mimePGM)
	if err != nil {
		return onPage(p, err)
	}
	if !rendered(img, mime) {
		return fmt.Errorf("%w: page %d could not be rendered", ErrDamaged, p)
	}
	c.calls.Add(1)
	rec, err := c.ocr.Recognize(ctx, provider.Document{Data: img, MIME: mime, Page: p, Format: c.format})
	if err != nil {
		return onPage(p, err)
	}
	text, format := pageText(rec)
	content := text
	if c.format == "html" && text != "" && format != "html" {
		if content, err = markdownToHTML(text); err != nil {
			return onPage(p, fmt.Errorf("converting the provider's markdown: %w", err))
		}
	}
	if c.format == "html" {
		content = preformatPlaintext(content)
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	c.pages[p-1] = pageOut{content: content, ocr: true, model: rec.Model, request: rec.Request, rawData: rec.RawData,
		chars: letterCount(text, format == "html")}
	return nil
}

// rendered reports whether pdftoppm wrote an image of the type asked for
// (it writes nothing, with success, for a page it cannot draw).
func rendered(img []byte, mime string) bool {
	if mime == mimePGM {
		return len(img) > 3 && img[0] == 'P' && img[1] == '5'
	}
	return len(img) > 3 && img[0] == 0xff && img[1] == 0xd8
}

// onPage says which page err happened on. The page comes last: a row's
// error must start with what went wrong, and a provider's failure must
// read "provider error (category=…, status=…)" from its first character
// (the spec's form), so "… on page 2" follows it.
func onPage(page int, err error) error {
	return fmt.Errorf("%w on page %d", err, page)
}

// dpi is the configured resolution, lowered for pages so large that the
// image would pass maxRenderSidePix.
func (c *conversion) dpi(p int) int {
	dpi := c.cfg.DPI
	if s, ok := c.info.sizes[p]; ok {
		if long := max(s[0], s[1]); long > 0 {
			dpi = min(dpi, int(maxRenderSidePix*72/long))
		}
	}
	return max(dpi, 1)
}

// shortOfLayer is a note for the request of OCR'd page index i, whose
// reading has chars letters and digits, when that is under half of those
// of the page's text layer (OCR_ALWAYS): text the engine did not read, in
// a script it was not given, or that it took for a picture, would
// otherwise pass unremarked, down to an empty page.
func (c *conversion) shortOfLayer(i, chars int) string {
	if c.layerChars == nil || c.layerChars[i] <= 0 || 2*chars >= c.layerChars[i] {
		return ""
	}
	return fmt.Sprintf("\n(this reading has %d letters and digits, the page's text layer %d: the engine may have missed text)", chars, c.layerChars[i])
}

func (c *conversion) assemble() Result {
	res := Result{Pages: len(c.pages), ProviderCalls: int(c.calls.Load())}
	var sb strings.Builder
	var md, requests, raws []string
	ocrPages, model := 0, ""
	for i, pg := range c.pages {
		n := i + 1
		if pg.ocr {
			ocrPages++
			if model == "" {
				model = pg.model
			}
			requests = append(requests, "page "+strconv.Itoa(n)+":\n"+pg.request+c.shortOfLayer(i, pg.chars))
			raws = append(raws, "page "+strconv.Itoa(n)+":\n"+pg.rawData)
		}
		if c.format == "markdown" {
			if t := strings.TrimSpace(pg.content); t != "" {
				md = append(md, t)
			}
			continue
		}
		sb.WriteString(`<section data-page="` + strconv.Itoa(n) + `">` + "\n")
		sb.WriteString(pg.content)
		sb.WriteString("</section>\n")
	}
	if c.format == "markdown" {
		res.Content = strings.Join(md, "\n\n")
	} else {
		res.Content = sb.String()
	}
	switch {
	case ocrPages == 0:
		res.Model = "pdftotext"
	case ocrPages == len(c.pages):
		res.Model = model
	default:
		res.Model = "pdftotext+" + model
	}
	if ocrPages > 0 {
		res.Request = strings.Join(requests, "\n\n")
		res.RawData = strings.Join(raws, "\n\n")
	}
	return res
}
