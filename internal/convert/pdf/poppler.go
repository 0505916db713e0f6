package pdf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Output caps of one poppler process. A text layer of one batch of pages
// is ~60 KiB per dense page; a rendered page at the capped size is a few
// MiB of JPEG. Anything far beyond is a hostile file, not a document.
const (
	maxTextOutput  = 96 << 20
	maxInfoOutput  = 8 << 20
	maxImageOutput = 64 << 20
	maxStderr      = 16 << 10
)

// runner runs poppler tools as processes bounded in time (a per-file budget
// shared by all of them), address space (RLIMIT_AS through prlimit) and
// output size.
type runner struct {
	prlimit  string // path of prlimit; "" runs without a memory limit
	memLimit int64
	env      []string
	budget   *budget
	procs    *Processes
	file     string // the path poppler opens the PDF by, never shown in messages
	extra    []*os.File
}

func newRunner(cfg Config, src *source) *runner {
	r := &runner{memLimit: cfg.MemoryLimit, file: src.arg, extra: src.extraFiles(), budget: &budget{limit: cfg.Timeout, remaining: cfg.Timeout},
		procs: cfg.Processes}
	if cfg.MemoryLimit > 0 {
		// Without prlimit (not Linux, or util-linux missing) the processes
		// still have the time budget and output caps; only RLIMIT_AS is lost.
		if p, err := exec.LookPath("prlimit"); err == nil {
			r.prlimit = p
		}
	}
	// Children get a minimal environment: nothing of ours (keys, URLs) is
	// theirs to see. HOME and the fontconfig variables let pdftoppm find
	// fonts for PDFs that do not embed them.
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "FONTCONFIG_FILE", "FONTCONFIG_PATH", "XDG_CACHE_HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			r.env = append(r.env, k+"="+v)
		}
	}
	r.env = append(r.env, "LC_ALL=C.UTF-8")
	return r
}

// budget is the per-file time limit on poppler work. Time spent waiting for
// the OCR provider is not charged: a 300-page scan is slow because of the
// provider, not because the PDF is hostile.
type budget struct {
	mu        sync.Mutex
	limit     time.Duration
	remaining time.Duration
}

// start returns a context that ends when the remaining budget does, and a
// function charging the time used.
func (b *budget) start(ctx context.Context) (context.Context, func(), error) {
	b.mu.Lock()
	rem := b.remaining
	b.mu.Unlock()
	if rem <= 0 {
		return nil, nil, timeoutError(b.limit)
	}
	pctx, cancel := context.WithTimeout(ctx, rem)
	began := time.Now()
	return pctx, func() {
		cancel()
		b.mu.Lock()
		b.remaining -= time.Since(began)
		b.mu.Unlock()
	}, nil
}

func timeoutError(limit time.Duration) error {
	return fmt.Errorf("%w (limit %s)", ErrTimeout, limit)
}

// toolError is a poppler process that failed; its message is built for rows
// by classify, never from the raw stderr (which names our temp file).
type toolError struct {
	tool     string
	stderr   string
	exitCode int
	signal   string
}

func (e *toolError) Error() string {
	if e.signal != "" {
		return fmt.Sprintf("%s was killed (%s)", e.tool, e.signal)
	}
	return fmt.Sprintf("%s exited with status %d", e.tool, e.exitCode)
}

// run starts tool with args and returns its standard output, at most
// maxOut bytes.
func (r *runner) run(ctx context.Context, maxOut int, tool string, args ...string) ([]byte, error) {
	release, err := r.procs.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", tool, err)
	}
	defer release()
	pctx, done, err := r.budget.start(ctx)
	if err != nil {
		return nil, err
	}
	defer done()

	argv := append([]string{tool}, args...)
	if r.prlimit != "" {
		argv = append([]string{r.prlimit, "--as=" + strconv.FormatInt(r.memLimit, 10), "--core=0", "--"}, argv...)
	}
	cmd := exec.CommandContext(pctx, argv[0], argv[1:]...)
	cmd.Env = r.env
	cmd.ExtraFiles = r.extra
	cmd.WaitDelay = 2 * time.Second
	stderr := &cappedBuffer{max: maxStderr}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", tool, err)
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("poppler-utils is not installed (%s not found)", tool)
		}
		return nil, fmt.Errorf("run %s: %w", tool, err)
	}
	out, readErr := io.ReadAll(io.LimitReader(stdout, int64(maxOut)+1))
	if len(out) > maxOut {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%w: %s wrote more than %d MiB", ErrTooComplex, tool, maxOut>>20)
	}
	waitErr := cmd.Wait()
	if pctx.Err() != nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, timeoutError(r.budget.limit)
	}
	if waitErr != nil {
		te := &toolError{tool: tool, stderr: stderr.String(), exitCode: -1}
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			te.exitCode = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				te.signal = ws.Signal().String()
			}
		}
		return nil, r.classify(te)
	}
	if readErr != nil {
		return nil, fmt.Errorf("read %s output: %w", tool, readErr)
	}
	// Poppler reports a failed allocation and carries on, exiting 0 with a
	// blank or cut image.
	if strings.Contains(stderr.String(), "Out of memory") {
		return nil, r.outOfMemory(tool)
	}
	return out, nil
}

func (r *runner) outOfMemory(tool string) error {
	if r.prlimit != "" {
		return fmt.Errorf("%w: %s ran out of memory at the %d MiB limit", ErrTooComplex, tool, r.memLimit>>20)
	}
	return fmt.Errorf("%w: %s ran out of memory", ErrTooComplex, tool)
}

// classify turns a failed poppler process into the sentence a row shows.
func (r *runner) classify(te *toolError) error {
	switch {
	case strings.Contains(te.stderr, "Incorrect password"):
		return ErrPasswordProtected
	case strings.Contains(te.stderr, "failed to execute"): // prlimit could not find the tool
		return fmt.Errorf("poppler-utils is not installed (%s not found)", te.tool)
	case strings.Contains(te.stderr, "error while loading shared libraries"):
		return fmt.Errorf("%s could not start under the %d MiB memory limit", te.tool, r.memLimit>>20)
	case strings.Contains(te.stderr, "Out of memory"):
		return r.outOfMemory(te.tool)
	}
	if te.signal != "" {
		limit := ""
		if r.prlimit != "" {
			limit = fmt.Sprintf(", possibly at the %d MiB memory limit", r.memLimit>>20)
		}
		return fmt.Errorf("%w: %s crashed (%s%s)", ErrTooComplex, te.tool, te.signal, limit)
	}
	return fmt.Errorf("%w: %s", ErrDamaged, r.reason(te.stderr))
}

// reason picks poppler's most telling complaint: the last error line, with
// byte offsets and our temp file's name taken out.
func (r *runner) reason(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	msg := ""
	for i := len(lines) - 1; i >= 0 && msg == ""; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.Contains(l, "Wrong page range") {
			continue
		}
		msg = l
	}
	if msg == "" {
		if strings.Contains(stderr, "Wrong page range") {
			return "it has no readable pages"
		}
		return "poppler could not read it"
	}
	if r.file != "" {
		msg = strings.ReplaceAll(msg, r.file, "the file")
	}
	for _, p := range []string{"Syntax Error", "Syntax Warning", "Internal Error", "Command Line Error", "I/O Error", "Error"} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "(") {
				if i := strings.IndexByte(rest, ')'); i > 0 {
					rest = strings.TrimSpace(rest[i+1:])
				}
			}
			msg = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
			break
		}
	}
	msg = strings.TrimSuffix(strings.ReplaceAll(msg, "<0a>", ""), ".")
	if len(msg) > 160 {
		msg = msg[:160]
	}
	msg = strings.ToValidUTF8(msg, "")
	if msg == "" {
		return "poppler could not read it"
	}
	return strings.ToLower(msg[:1]) + msg[1:]
}

// cappedBuffer keeps the first max bytes written and drops the rest without
// failing the writer (a failing writer would block the process).
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string { return b.buf.String() }

// docInfo is what pdfinfo says about the file.
type docInfo struct {
	pages int
	// sizes holds each page's displayed width and height in points (after
	// /Rotate), for the first pages up to the page cap.
	sizes map[int][2]float64
}

// info runs pdfinfo over the first maxPages pages.
func (r *runner) info(ctx context.Context, maxPages int) (docInfo, error) {
	out, err := r.run(ctx, maxInfoOutput, "pdfinfo", "-f", "1", "-l", strconv.Itoa(maxPages), r.file)
	if err != nil {
		return docInfo{}, err
	}
	return parseInfo(out), nil
}

func parseInfo(out []byte) docInfo {
	di := docInfo{sizes: map[int][2]float64{}}
	rot := map[int]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Pages:"); ok {
			di.pages, _ = strconv.Atoi(strings.TrimSpace(v))
			continue
		}
		rest, ok := strings.CutPrefix(line, "Page ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 3 {
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		switch f[1] {
		case "size:": // "Page    1 size:  595 x 842 pts (A4)"
			if len(f) >= 5 && f[3] == "x" {
				w, err1 := strconv.ParseFloat(f[2], 64)
				h, err2 := strconv.ParseFloat(f[4], 64)
				if err1 == nil && err2 == nil {
					di.sizes[n] = [2]float64{w, h}
				}
			}
		case "rot:":
			rot[n], _ = strconv.Atoi(f[2])
		}
	}
	for n, r := range rot {
		if s, ok := di.sizes[n]; ok && (r%180+180)%180 == 90 {
			di.sizes[n] = [2]float64{s[1], s[0]}
		}
	}
	return di
}

// textLayer runs pdftotext -bbox-layout over pages [first, last].
func (r *runner) textLayer(ctx context.Context, first, last int) ([]byte, error) {
	return r.run(ctx, maxTextOutput, "pdftotext", "-q", "-enc", "UTF-8", "-bbox-layout",
		"-f", strconv.Itoa(first), "-l", strconv.Itoa(last), r.file, "-")
}

// fontLayer runs pdftohtml -xml over pages [first, last] for font sizes and
// weights, which pdftotext does not report. -nodrm matches pdftotext (which
// ignores the copy permission); -hidden keeps invisible OCR text layers.
func (r *runner) fontLayer(ctx context.Context, first, last int) ([]byte, error) {
	return r.run(ctx, maxTextOutput, "pdftohtml", "-q", "-xml", "-i", "-hidden", "-nodrm", "-stdout",
		"-zoom", strconv.Itoa(fontZoom), "-f", strconv.Itoa(first), "-l", strconv.Itoa(last), r.file)
}

// imageCoverage runs pdfimages -list over pages [first, last] and returns
// the fraction of each page's area drawn with images (capped at 1).
func (r *runner) imageCoverage(ctx context.Context, first, last int, sizes map[int][2]float64) (map[int]float64, error) {
	out, err := r.run(ctx, maxInfoOutput, "pdfimages", "-q", "-list",
		"-f", strconv.Itoa(first), "-l", strconv.Itoa(last), r.file)
	if err != nil {
		return nil, err
	}
	return parseImageList(out, sizes), nil
}

// parseImageList reads pdfimages -list: "page num type width height color
// comp bpc enc interp object ID x-ppi y-ppi size ratio".
func parseImageList(out []byte, sizes map[int][2]float64) map[int]float64 {
	cov := map[int]float64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 14 {
			continue
		}
		page, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		if f[2] != "image" && f[2] != "stencil" {
			continue
		}
		w, _ := strconv.ParseFloat(f[3], 64)
		h, _ := strconv.ParseFloat(f[4], 64)
		xppi, _ := strconv.ParseFloat(f[12], 64)
		yppi, _ := strconv.ParseFloat(f[13], 64)
		s, ok := sizes[page]
		if !ok || xppi <= 0 || yppi <= 0 || s[0] <= 0 || s[1] <= 0 {
			continue
		}
		area := (w / xppi * 72) * (h / yppi * 72)
		cov[page] = min(1, cov[page]+area/(s[0]*s[1]))
	}
	return cov
}

// render runs pdftoppm for one page at dpi, as JPEG or, with gray, as raw
// PGM (pdftoppm's own format: no compression, grey only).
func (r *runner) render(ctx context.Context, page, dpi int, gray bool) ([]byte, error) {
	n := strconv.Itoa(page)
	format := "-jpeg"
	if gray {
		format = "-gray"
	}
	return r.run(ctx, maxImageOutput, "pdftoppm", "-q", format, "-r", strconv.Itoa(dpi), "-f", n, "-l", n, r.file)
}
