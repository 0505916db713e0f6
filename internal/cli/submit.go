package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// submitOptions are submit's flags.
type submitOptions struct {
	client                  clientFlags
	prompts                 []string
	schemaFile              string
	wait, json              bool
	title, idempotencyKey   string
	neuralType, neuralModel string
	neuralKey               string
	ocrProvider, ocrModel   string
	ocrKey                  string
}

// The recognition defaults are the spec's typical recognition backend and
// README's example, so that a caller with a Mistral key needs no more than
// DOCJOBS_OCR_KEY.
const (
	defaultOCRProvider = "PROVIDER_1"
	defaultOCRModel    = "mistral-ocr-latest"
)

func submitCommand(env *environment) *cobra.Command {
	o := submitOptions{}
	cmd := &cobra.Command{
		Use:   "submit FILE|URL...",
		Short: "Client: upload files, create a job, optionally wait for it and print its result",
		Long: `submit creates a job on a docjobs service over its REST API. Each argument that is an
http(s) URL is a source as it is; any other is a local file, uploaded first
(POST /v1/jobs/upload, streamed from disk). Every local file is checked before
anything is uploaded.

Without --wait it prints the job id on stdout (the created job as JSON with
--json). With --wait it follows the job's progress on stderr and prints its
result JSON on stdout once it ends; Ctrl-C stops waiting, not the job.

The service is --server or DOCJOBS_URL (default ` + defaultServerURL + `), opened with
DOCJOBS_API_KEY (or the file DOCJOBS_API_KEY_FILE names).

Provider keys: the service needs a recognition key on every job, even one
whose files need no recognition (TXT, HTML, office files, PDFs with text).
Give keys as DOCJOBS_OCR_KEY and DOCJOBS_NEURAL_KEY (or their _FILE
variants); the --ocr-key and --neural-key flags work too, but stay in shell
history and show in the process list. Provider names are the service's
NEURAL_CLIENT_TYPE_ values, with or without that prefix (PROVIDER_2, OPENAI).

--wait follows the service's progress stream, or polls the job where the
service has none; it reconnects for about two minutes while the service
restarts. Requests the service answers 429 (its per-account rate limit) are
sent again after its Retry-After.

Exit codes: 0 done (with --wait: the job is COMPLETE and no row FAILED), 1
error (the service's message and HTTP status are shown), 2 usage, 130
interrupted (Ctrl-C, SIGTERM; with --wait the job goes on); with --wait 3
the job FAILED, 4 it was CANCELLED, 5 it is COMPLETE but some files or
model rows FAILED (a wrong model key, a file the provider refused); the
result is printed in all three cases.`,
		Example: `  export DOCJOBS_API_KEY=dj_... DOCJOBS_OCR_KEY=...
  docjobs submit report.pdf https://example.com/invoice.html --wait
  DOCJOBS_NEURAL_KEY=sk-... docjobs submit scan.png --prompt 'List the totals' \
    --schema totals.json --neural-type PROVIDER_2 --neural-model gpt-4o-mini --wait`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return submit(cmd.Context(), env, o, args)
		},
	}
	o.client.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&o.prompts, "prompt", nil, "prompt the model runs over each file's text (one: the service runs only the first)")
	f.StringVar(&o.schemaFile, "schema", "", "JSON Schema file the model's answer must follow (responseSchema; needs --prompt)")
	f.BoolVar(&o.wait, "wait", false, "follow the job's progress on stderr and print its result on stdout")
	f.BoolVar(&o.json, "json", false, "print the created job as JSON instead of its id (with --wait the result is JSON anyway)")
	f.StringVar(&o.title, "title", "", "job title")
	f.StringVar(&o.idempotencyKey, "idempotency-key", "", "the same key with the same request returns the first job instead of a new one (local files are uploaded anew by each run, so only a submit of URLs can replay); default: a random key of this run, so that a create sent again after a lost answer makes no second job")
	f.StringVar(&o.neuralType, "neural-type", "", "model provider, like PROVIDER_2 (required with --prompt)")
	f.StringVar(&o.neuralModel, "neural-model", "", "model id of that provider, like gpt-4o-mini (required with --prompt)")
	f.StringVar(&o.neuralKey, "neural-key", "", "model provider key; prefer DOCJOBS_NEURAL_KEY (or DOCJOBS_NEURAL_KEY_FILE)")
	f.StringVar(&o.ocrProvider, "ocr-provider", defaultOCRProvider, "recognition provider")
	f.StringVar(&o.ocrModel, "ocr-model", defaultOCRModel, "recognition model of that provider")
	f.StringVar(&o.ocrKey, "ocr-key", "", "recognition provider key; prefer DOCJOBS_OCR_KEY (or DOCJOBS_OCR_KEY_FILE)")
	return cmd
}

// createRequest is the body of POST /v1/jobs that submit sends.
type createRequest struct {
	SourceURLs     []string      `json:"sourceUrls"`
	Prompts        []string      `json:"prompts,omitempty"`
	Neural         neuralRequest `json:"neural"`
	OCR            ocrRequest    `json:"ocr"`
	ResponseSchema string        `json:"responseSchema,omitempty"`
	Title          string        `json:"title,omitempty"`
	IdempotencyKey string        `json:"idempotencyKey,omitempty"`
}

type neuralRequest struct {
	Type   string `json:"type,omitempty"`
	Model  string `json:"model,omitempty"`
	APIKey string `json:"apiKey,omitempty"`
}

type ocrRequest struct {
	Provider    string `json:"provider"`
	Model       string `json:"model"`
	ProviderKey string `json:"providerKey"`
}

func submit(ctx context.Context, env *environment, o submitOptions, args []string) error {
	cfg, err := env.clientConfig(o.client)
	if err != nil {
		return err
	}
	req, err := o.request(env)
	if err != nil {
		return err
	}
	// Every check that can fail without the service runs before the first
	// upload: an upload made for a job that is never created stays, and
	// counts against the account's upload quota, until deleted.
	if len(args) > maxSources {
		return fmt.Errorf("%w: %d files and URLs: a job takes at most %d (submit them as several jobs)", errUsage, len(args), maxSources)
	}
	var local []int
	for i, a := range args {
		if isSourceURL(a) {
			continue
		}
		if err := readableFile(a); err != nil {
			return fmt.Errorf("upload %s: %w", a, err)
		}
		local = append(local, i)
	}

	c := newClient(cfg)
	c.notes = env.stderr
	c.hide(req.OCR.ProviderKey, req.Neural.APIKey)
	req.SourceURLs = append([]string(nil), args...)
	var uploaded []string
	for _, i := range local {
		up, err := c.upload(ctx, args[i])
		if err != nil {
			c.removeUploads(ctx, env, uploaded, "no job was created")
			return err
		}
		fmt.Fprintf(env.stderr, "uploaded %s (%d bytes): %s\n", args[i], up.SizeBytes, shownText(up.URL))
		req.SourceURLs[i] = up.URL
		uploaded = append(uploaded, up.URL)
	}
	var created json.RawMessage
	if maybeMade, err := c.createJob(ctx, req, &created); err != nil {
		// Only a refusal, or a service never reached, is sure to have made
		// no job: after a lost answer (a connection cut, a 5xx) the job
		// may exist and read the uploads.
		var refused *apiError
		if maybeMade && (!errors.As(err, &refused) || refused.status >= 500) {
			if len(uploaded) > 0 {
				return fmt.Errorf("%w; the job may have been created (`docjobs jobs` lists it), so the %d uploads above are kept", err, len(uploaded))
			}
			return fmt.Errorf("%w; the job may have been created: `docjobs jobs` lists it", err)
		}
		c.removeUploads(ctx, env, uploaded, "no job was created")
		if refused == nil {
			return fmt.Errorf("%w; no job was created", err)
		}
		if len(uploaded) > 0 && o.idempotencyKey != "" && strings.Contains(refused.message, "idempotency key reused") {
			return fmt.Errorf("%w; local files are uploaded anew by every run, so a submit of local files cannot replay the job an earlier run made: `docjobs jobs` lists it", err)
		}
		return err
	}
	var j struct{ ID string }
	if err := json.Unmarshal(created, &j); err != nil || j.ID == "" {
		return fmt.Errorf("create job: the answer carries no job id: %s", truncate(c.shown(string(created)), 200))
	}
	switch {
	case o.wait:
		fmt.Fprintf(env.stderr, "job %s created\n", shownText(j.ID))
		err := waitAndPrint(ctx, env, c, j.ID)
		if ended(err) {
			// The job is over and keeps its own copies of its sources
			// (its files): kept, the uploads would count against the
			// account's upload quota until deleted, and nothing else
			// names them.
			c.removeUploads(ctx, env, uploaded, "the job has ended and keeps its own copy")
		}
		return err
	case o.json:
		return printIndented(env.stdout, []byte(c.shown(string(created))))
	default:
		// The id is the caller's only handle on the job: not written, the
		// command failed.
		if _, err := fmt.Fprintln(env.stdout, j.ID); err != nil {
			return fmt.Errorf("job %s created; write its id: %w", j.ID, err)
		}
		return nil
	}
}

// readableFile checks that path is a regular file this process can open:
// a file found unreadable after others were uploaded would leave them to
// be removed again.
func readableFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return nil
}

// ended reports whether waitAndPrint's err says the job reached its end
// (COMPLETE, with or without FAILED rows, FAILED or CANCELLED), rather
// than that the wait stopped while the job goes on.
func ended(err error) bool {
	var ee *exitError
	return err == nil || errors.As(err, &ee) && (ee.code == ExitRowsFailed || ee.code == ExitJobFailed || ee.code == ExitJobCancelled)
}

// removeUploads deletes the uploads this run made, for a job that was not
// created or has ended (why): kept, they would count against the
// account's upload quota until deleted, and nothing names them. It runs even after an interrupt
// (a second one stops it), for removeBudget and removePerUpload for each
// upload: the deletes go one after another, and a 429 of the account's
// rate limit, likely right after a burst of uploads, is waited out (do).
// What it cannot delete it names.
func (c *client) removeUploads(ctx context.Context, env *environment, urls []string, why string) {
	budget := removeBudget + time.Duration(len(urls))*removePerUpload
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	for _, raw := range urls {
		path := raw
		if u, err := url.Parse(raw); err == nil {
			if i := strings.LastIndex(u.Path, "/v1/files/"); i >= 0 {
				path = u.Path[i:]
			}
		}
		resp, err := c.do(ctx, http.MethodDelete, path, nil, "", -1)
		if err != nil {
			fmt.Fprintf(env.stderr, "could not remove the upload %s: %v\n", shownText(raw), err)
			continue
		}
		resp.Body.Close()
		fmt.Fprintf(env.stderr, "removed the upload %s: %s\n", shownText(raw), why)
	}
}

// maxSources is the most sourceUrls the service takes in one job
// (internal/api/validate.go); more would be refused only after every file
// was uploaded.
const maxSources = 100

// The time removeUploads has: removePerUpload is one delete at 5 a second,
// a tenth of the default DOCJOBS_ACCOUNT_RATE.
const (
	removeBudget    = 10 * time.Second
	removePerUpload = 200 * time.Millisecond
)

// request builds the create request from the flags and the environment,
// refusing what the service would refuse for sure, before any upload.
func (o submitOptions) request(env *environment) (createRequest, error) {
	if len(o.prompts) > 1 {
		return createRequest{}, fmt.Errorf("%w: one --prompt: the service runs only the first", errUsage)
	}
	if len(o.prompts) == 1 && strings.TrimSpace(o.prompts[0]) == "" {
		return createRequest{}, fmt.Errorf("%w: --prompt is empty (leave it out to skip the model)", errUsage)
	}
	if len(o.prompts) == 1 && (o.neuralType == "" || o.neuralModel == "") {
		return createRequest{}, fmt.Errorf("%w: --prompt needs --neural-type and --neural-model", errUsage)
	}
	if o.schemaFile != "" && len(o.prompts) == 0 {
		// The service takes the schema and, with no prompt, calls no model:
		// nothing is ever checked against it, and the run succeeds.
		return createRequest{}, fmt.Errorf("%w: --schema needs --prompt: without a prompt no model runs, and nothing is checked against the schema", errUsage)
	}
	if o.ocrProvider == "" || o.ocrModel == "" {
		return createRequest{}, fmt.Errorf("%w: --ocr-provider and --ocr-model must not be empty", errUsage)
	}
	for flag, name := range map[string]string{"--ocr-provider": o.ocrProvider, "--neural-type": o.neuralType} {
		if p := providerName(name); p != "" && docjobsv1.NeuralClientType_value[p] == 0 {
			// The service reads an unknown name as unspecified, and says
			// that it is missing.
			return createRequest{}, fmt.Errorf("%w: %s %s: want PROVIDER_1 to PROVIDER_8 (or MISTRAL, OPENAI, ANTHROPIC, GEMINI, XAI, OPENROUTER, QWEN, SELF_HOSTED)", errUsage, flag, name)
		}
	}
	ocrKey, err := flagOrSecret(env, o.ocrKey, "DOCJOBS_OCR_KEY")
	if err != nil {
		return createRequest{}, err
	}
	if ocrKey == "" {
		return createRequest{}, fmt.Errorf("%w: a recognition key is required, even for files that need no recognition: set DOCJOBS_OCR_KEY or DOCJOBS_OCR_KEY_FILE (or --ocr-key)", errUsage)
	}
	neuralKey, err := flagOrSecret(env, o.neuralKey, "DOCJOBS_NEURAL_KEY")
	if err != nil {
		return createRequest{}, err
	}
	req := createRequest{
		Prompts:        o.prompts,
		Neural:         neuralRequest{Type: providerName(o.neuralType), Model: o.neuralModel, APIKey: neuralKey},
		OCR:            ocrRequest{Provider: providerName(o.ocrProvider), Model: o.ocrModel, ProviderKey: ocrKey},
		Title:          o.title,
		IdempotencyKey: o.idempotencyKey,
	}
	if req.IdempotencyKey == "" {
		// The create is sent again after a 503 or a 429 (do): with a key
		// of this run's own, a create the service did make is returned,
		// not made twice.
		var b [16]byte
		_, _ = rand.Read(b[:])
		req.IdempotencyKey = "submit-" + hex.EncodeToString(b[:])
	}
	if o.schemaFile != "" {
		raw, err := os.ReadFile(o.schemaFile)
		if err != nil {
			return createRequest{}, fmt.Errorf("%w: --schema: %w", errUsage, err)
		}
		if !json.Valid(raw) {
			return createRequest{}, fmt.Errorf("%w: --schema %s is not JSON", errUsage, o.schemaFile)
		}
		req.ResponseSchema = string(raw)
	}
	return req, nil
}

func flagOrSecret(env *environment, flag, name string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return env.secret(name)
}

// providerName is the wire name of a provider given with or without the
// NEURAL_CLIENT_TYPE_ prefix, in any case; "" stays "".
func providerName(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" || strings.HasPrefix(s, "NEURAL_CLIENT_TYPE_") {
		return s
	}
	return "NEURAL_CLIENT_TYPE_" + s
}

// isSourceURL reports whether a submit argument is a URL for the service
// to fetch rather than a local file.
func isSourceURL(a string) bool {
	u, err := url.Parse(a)
	return err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != ""
}

// waitAndPrint follows the job to its end, printing progress on stderr,
// then prints its result on stdout. A job that did not complete ends the
// command with its own exit code, after its result.
func waitAndPrint(ctx context.Context, env *environment, c *client, id string) error {
	last := ""
	show := func(p progress) {
		line := progressLine(shownText(id), p)
		if line != last { // a reconnect repeats the current state
			fmt.Fprintln(env.stderr, line)
			last = line
		}
	}
	goesOn := fmt.Sprintf("job %s goes on: `docjobs get %s` shows it, `docjobs get %s --result` prints its result", id, id, id)
	end, err := c.follow(ctx, id, show)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: ExitInterrupted, err: errors.New("stopped waiting; " + goesOn)}
		}
		return fmt.Errorf("follow job %s: %w; stopped waiting, the %s", id, err, goesOn)
	}
	show(end)
	var rows rowStatuses
	if err := c.copyTo(ctx, "/v1/jobs/"+url.PathEscape(id)+"/result", io.MultiWriter(env.stdout, &rows)); err != nil {
		return fmt.Errorf("job %s ended %s; its result: %w", id, end.Status, err)
	}
	failed := failedRows(rows)
	code := ExitOK
	switch end.Status {
	case "JOB_STATUS_COMPLETE":
		if failed == "" {
			return nil
		}
		return &exitError{code: ExitRowsFailed, err: fmt.Errorf(
			"job %s is COMPLETE, but %s: the result's ocr[].error and llm[].error say why", id, failed)}
	case "JOB_STATUS_CANCELLED":
		code = ExitJobCancelled
	default:
		code = ExitJobFailed
	}
	msg := fmt.Sprintf("job %s ended %s", id, shownText(end.Status))
	if end.Error != "" {
		msg += ": " + shownText(end.Error)
	}
	if failed != "" {
		msg += "; " + failed
	}
	return &exitError{code: code, err: errors.New(msg)}
}

// progressLine is one line of a job's progress for a person to read. The
// stream counts a FAILED or SKIPPED row as finished, not as a success:
// which rows failed the result says (failedRows). The status and the
// error are the service's text (shownText).
func progressLine(id string, p progress) string {
	status := shownText(strings.TrimPrefix(p.Status, "JOB_STATUS_"))
	line := fmt.Sprintf("job %s: %s, files finished %d/%d, model rows finished %d/%d", id,
		status, p.OCRDone, p.OCRTotal, p.LLMDone, p.LLMTotal)
	if p.polled { // GET /v1/jobs/{id} has no row counts
		line = fmt.Sprintf("job %s: %s", id, status)
	}
	if p.Error != "" {
		line += ", error: " + shownText(p.Error)
	}
	return line
}

// failedRows says how many files and model rows of a result FAILED, "" for
// none.
func failedRows(r rowStatuses) string {
	var parts []string
	if r.OCRFailed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d files FAILED recognition", r.OCRFailed, r.OCR))
	}
	if r.LLMFailed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d model rows FAILED", r.LLMFailed, r.LLM))
	}
	return strings.Join(parts, ", ")
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// printIndented writes a JSON answer indented, as it came otherwise.
func printIndented(w io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		_, err = fmt.Fprintf(w, "%s\n", raw)
		return err
	}
	b.WriteByte('\n')
	_, err := b.WriteTo(w)
	return err
}
