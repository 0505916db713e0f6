package office

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// legacyMarkdown converts a legacy or OpenDocument file to its OOXML
// counterpart with LibreOffice and reads that natively.
func legacyMarkdown(ctx context.Context, cfg Config, kind string, data []byte) (string, string, error) {
	if err := checkODF(cfg, kind, data); err != nil {
		return "", "", err
	}
	ext, err := inputExt(cfg, kind, data)
	if err != nil {
		return "", "", err
	}
	target, native := "docx", DOCX
	switch ext {
	case "xls", "ods":
		target, native = "xlsx", XLSX
	case "ppt", "odp":
		target, native = "pptx", PPTX
	}
	bin, err := sofficePath(cfg)
	if err != nil {
		return "", "", err
	}
	converted, err := convertWithLibreOffice(ctx, cfg, bin, data, ext, target)
	if err != nil {
		return "", "", err
	}
	md, model, err := Markdown(ctx, cfg, native, converted)
	if err != nil {
		return "", "", err
	}
	return md, ModelLibreOfficePrefix + model, nil
}

// checkODF applies the zip limits to an OpenDocument package before
// LibreOffice inflates it.
func checkODF(cfg Config, kind string, data []byte) error {
	if kind != ODT && kind != ODS && kind != ODP {
		return nil
	}
	_, err := openArchive(data, docName(kind), cfg)
	return err
}

// inputExt is the file extension LibreOffice is given for kind; for an
// OLE compound file it is decided from the streams inside.
func inputExt(cfg Config, kind string, data []byte) (string, error) {
	switch kind {
	case DOCX:
		return "docx", nil
	case XLSX:
		return "xlsx", nil
	case PPTX:
		return "pptx", nil
	case ZIP:
		native, err := zipKind(cfg, data)
		if err != nil {
			return "", err
		}
		return inputExt(cfg, native, data)
	case ODT:
		return "odt", nil
	case ODS:
		return "ods", nil
	case ODP:
		return "odp", nil
	}
	// DOC, XLS, PPT and OLE: mimetype's finer names are guesses from a few
	// class ids, so look at the streams either way.
	return oleExt(kind, data)
}

// sofficePath finds the LibreOffice binary.
func sofficePath(cfg Config) (string, error) {
	if cfg.Soffice != "" {
		p, err := exec.LookPath(cfg.Soffice)
		if err != nil {
			return "", fmt.Errorf("%w (%s: %v)", ErrNoLibreOffice, cfg.Soffice, err)
		}
		return p, nil
	}
	for _, name := range []string{"soffice", "libreoffice"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoLibreOffice
}

// maxStderr bounds what is kept of LibreOffice's messages.
const maxStderr = 16 << 10

// convertWithLibreOffice runs one headless conversion in a private
// directory with a private profile (so conversions run side by side and
// share no state) and a minimal environment (sofficeEnv), killing
// LibreOffice's whole process group when the time is up. It returns the
// converted file.
func convertWithLibreOffice(ctx context.Context, cfg Config, bin string, data []byte, inExt, target string) ([]byte, error) {
	tmp, err := cfg.tempDir(ctx)
	if err != nil {
		return nil, fmt.Errorf("LibreOffice conversion: %w", err)
	}
	dir, err := os.MkdirTemp(tmp, "docjobs-office-")
	if err != nil {
		return nil, fmt.Errorf("LibreOffice conversion: %w", err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in", "document."+inExt)
	outDir := filepath.Join(dir, "out")
	tmpDir := filepath.Join(dir, "tmp")
	for _, d := range []string{filepath.Dir(in), outDir, tmpDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("LibreOffice conversion: %w", err)
		}
	}
	if err := os.WriteFile(in, data, 0o600); err != nil {
		return nil, fmt.Errorf("LibreOffice conversion: %w", err)
	}
	profile := url.URL{Scheme: "file", Path: filepath.Join(dir, "profile")}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin,
		"--headless", "--invisible", "--norestore", "--nologo", "--nodefault", "--nolockcheck",
		"-env:UserInstallation="+profile.String(),
		"--convert-to", target, "--outdir", outDir, in)
	cmd.Dir = dir
	cmd.Env = sofficeEnv(os.LookupEnv, tmpDir)
	cmd.Stdin = nil
	stderr := &boundedBuffer{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	ownProcessGroup(cmd)
	// Output pipes held open by a stray child must not hang Wait.
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	if runCtx.Err() != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("LibreOffice took longer than the %s limit to convert the file", cfg.Timeout)
	}
	out := filepath.Join(outDir, "document."+target)
	st, statErr := os.Stat(out)
	if runErr != nil || statErr != nil {
		msg := lastLine(stderr.String())
		if runErr == nil {
			runErr = errors.New("no output")
		}
		if msg != "" {
			return nil, fmt.Errorf("LibreOffice could not convert the file: %s (%v)", msg, runErr)
		}
		return nil, fmt.Errorf("LibreOffice could not convert the file (%v)", runErr)
	}
	if st.Size() > cfg.MaxInflatedBytes {
		return nil, fmt.Errorf("LibreOffice's conversion is larger than the %s limit", sizeString(cfg.MaxInflatedBytes))
	}
	return os.ReadFile(out)
}

// sofficeEnvKeys are the variables of the service's environment that
// LibreOffice gets, as poppler and tesseract do: what it needs to find
// programs, fonts and the locale. The rest (DOCJOBS_API_KEYS, the database
// URL, AWS_SECRET_ACCESS_KEY …) is nothing a document converter parsing
// untrusted files should be able to read.
var sofficeEnvKeys = []string{"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "FONTCONFIG_FILE", "FONTCONFIG_PATH", "XDG_CACHE_HOME"}

// sofficeEnv is LibreOffice's environment: sofficeEnvKeys as lookup has
// them, and TMPDIR set to tmpDir, inside the conversion's own folder, so
// that LibreOffice's working files (lu*.tmp: pieces of the document) go
// where the conversion's cleanup, and serve's emptying at start after a
// crash, reach them, not to the system's /tmp.
func sofficeEnv(lookup func(string) (string, bool), tmpDir string) []string {
	env := make([]string, 0, len(sofficeEnvKeys)+1)
	for _, k := range sofficeEnvKeys {
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, "TMPDIR="+tmpDir)
}

// lastLine is the last meaningful line LibreOffice printed; it prints a
// line per problem, the one that matters last.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.Contains(l, "javaldx") {
			continue
		}
		if len(l) > 300 {
			l = l[:300]
		}
		return l
	}
	return ""
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }
