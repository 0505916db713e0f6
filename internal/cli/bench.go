package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/spf13/cobra"

	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/slots"
)

// benchOptions shape one `docjobs bench` run.
type benchOptions struct {
	latency     time.Duration
	files       int
	chunks      int
	jobs        int
	concurrency int
	cpuProfile  string
	windows     string
	databaseURL string
}

func benchCommand(env *environment) *cobra.Command {
	o := benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run the service against an in-process provider with a set latency and report overhead",
		Long: `bench starts docjobs on a temporary SQLite database with an in-process OpenAI-protocol
provider that answers after --latency, submits --jobs jobs of --files text files that each split
into --chunks chunks, waits for each on its event stream (GET /v1/jobs/{id}/events), and reports
each job's wall time divided by its critical-path provider time
(one call: every chunk of every file can run at once), and jobs per second. It then runs the same
fetches and provider calls straight from one client, without the service, through the same provider
adapter: that ratio is what the machine itself costs, the floor under the service's.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.files < 1 || o.chunks < 1 || o.jobs < 1 || o.concurrency < 1 || o.latency <= 0 {
				return fmt.Errorf("%w: --files, --chunks, --jobs, --concurrency and --latency must be positive", errUsage)
			}
			return runBench(cmd.Context(), env, o)
		},
	}
	cmd.Flags().DurationVar(&o.latency, "latency", 200*time.Millisecond, "provider latency per call")
	cmd.Flags().IntVar(&o.files, "files", 10, "files per job")
	cmd.Flags().IntVar(&o.chunks, "chunks", 10, "chunks per file")
	// 40 by default: a run's first job opens every connection and warms
	// every cache, and with three the median was the slower of the other two.
	cmd.Flags().IntVar(&o.jobs, "jobs", 40, "jobs, run one after another; the median is reported")
	cmd.Flags().IntVar(&o.concurrency, "concurrency", 128, "provider calls and model workers in flight")
	cmd.Flags().StringVar(&o.databaseURL, "database-url", "", "run on this database (postgres://…) instead of a temporary SQLite file")
	cmd.Flags().StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured jobs to this file")
	cmd.Flags().StringVar(&o.windows, "windows", "", "write each job's two overhead windows to this file, in CLOCK_MONOTONIC nanoseconds, for perf (scripts/bench-windows.py)")
	return cmd
}

func runBench(ctx context.Context, env *environment, o benchOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dir, err := os.MkdirTemp("", "docjobs-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var tl benchTimeline
	provider, err := listenLocal(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		tl.mark(&tl.firstCall, &tl.lastCall)
		select {
		case <-time.After(o.latency):
		case <-r.Context().Done():
			return
		}
		defer tl.mark(nil, &tl.lastAnswer)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"b","object":"chat.completion","created":1,"model":"bench",`+
			`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"ok\":true}"}}],`+
			`"usage":{"prompt_tokens":300,"completion_tokens":5,"total_tokens":305}}`)
	}))
	if err != nil {
		return err
	}
	addr, err := freeLocalAddr()
	if err != nil {
		return err
	}
	key := auth.NewKey()
	vars := map[string]string{
		"DOCJOBS_ADDR": addr, "DOCJOBS_PUBLIC_URL": "http://" + addr, "DOCJOBS_DATA_DIR": dir,
		"DOCJOBS_API_KEYS": "bench:" + key, "DOCJOBS_ALLOW_PRIVATE_URLS": "true",
		"DOCJOBS_PROVIDER_2_BASE_URL":  provider + "/v1",
		"DOCJOBS_PROVIDER_CONCURRENCY": strconv.Itoa(o.concurrency),
		"DOCJOBS_MODEL_WORKERS":        strconv.Itoa(o.concurrency),
		"DOCJOBS_LOG_LEVEL":            "error",
	}
	if o.databaseURL != "" {
		vars["DOCJOBS_DATABASE_URL"] = o.databaseURL
	}
	serveEnv := &environment{stdout: io.Discard, stderr: env.stderr, getenv: func(k string) string { return vars[k] }}
	cfg, err := serveEnv.config(nil)
	if err != nil {
		return err
	}
	if err := checkBenchBounds(o, cfg); err != nil {
		return err
	}
	doc := benchDocument(o.chunks)
	sources, err := listenLocal(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tl.mark(&tl.firstFetch, &tl.lastFetch)
		_, _ = io.WriteString(w, doc)
	}))
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- serve(ctx, serveEnv, cfg) }()
	base := "http://" + addr
	if err := waitReady(ctx, base, served); err != nil {
		return err
	}

	urls := make([]string, o.files)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/doc-%d.md", sources, i)
	}
	body, _ := json.Marshal(map[string]any{
		"sourceUrls": urls, "prompts": []string{"Summarize."},
		"neural": map[string]any{"type": "NEURAL_CLIENT_TYPE_PROVIDER_2", "model": "gpt-4o-mini", "apiKey": "bench", "chunkBudgetTokens": benchBudget},
		"ocr":    map[string]any{"provider": "NEURAL_CLIENT_TYPE_PROVIDER_2", "model": "gpt-4o-mini", "providerKey": "bench"},
	})
	var walls []time.Duration
	var phases []benchPhases
	windows, err := openWindows(o.windows)
	if err != nil {
		return err
	}
	defer windows.close()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile() // when a job fails; a no-op after the stop below
	}
	cpuStart, _ := processCPU()
	start := time.Now()
	events := newClient(clientConfig{server: base, apiKey: key})
	for range o.jobs {
		created := tl.reset()
		wall, rows, err := benchJob(ctx, events, body)
		if err != nil {
			return err
		}
		phases = append(phases, tl.phases(created, wall))
		windows.write("service", &tl, created, wall)
		if rows != o.files*o.chunks {
			fmt.Fprintf(env.stdout, "note: the job made %d model rows, not %d\n", rows, o.files*o.chunks)
		}
		walls = append(walls, wall)
	}
	total := time.Since(start)
	cpuService, _ := processCPU()
	if o.cpuProfile != "" {
		pprof.StopCPUProfile() // the floor's runs are not the service's
	}
	direct, directPhases, err := benchDirect(ctx, &tl, provider, urls, o, windows)
	if err != nil {
		return err
	}
	cpuDirect, cpuOK := processCPU()
	cancel()
	<-served

	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	median := walls[len(walls)/2]
	fmt.Fprintf(env.stdout, "jobs %d × %d files × %d chunks, provider latency %s, concurrency %d, GOMAXPROCS %d on %d CPUs\n",
		o.jobs, o.files, o.chunks, o.latency, o.concurrency, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(env.stdout, "job wall time: median %s, best %s, worst %s\n",
		median.Round(time.Millisecond), walls[0].Round(time.Millisecond), walls[len(walls)-1].Round(time.Millisecond))
	fmt.Fprintf(env.stdout, "wall ÷ critical-path provider time: median %.2f (best %.2f)\n",
		float64(median)/float64(o.latency), float64(walls[0])/float64(o.latency))
	fmt.Fprintf(env.stdout, "jobs/s: %.2f\n", float64(o.jobs)/total.Seconds())
	printPhases(env.stdout, "medians", phases)
	fmt.Fprintf(env.stdout, "without the service (the same fetches and provider calls from one client): median %s, wall ÷ critical path %.2f; the service adds %s\n",
		direct.Round(100*time.Microsecond), float64(direct)/float64(o.latency), (median - direct).Round(100*time.Microsecond))
	printPhases(env.stdout, "medians without the service", directPhases)
	if cpuOK {
		// Both include the stand-in servers' and the client's CPU, which
		// the two runs share.
		perJob := func(d time.Duration) time.Duration { return (d / time.Duration(o.jobs)).Round(100 * time.Microsecond) }
		fmt.Fprintf(env.stdout, "CPU per job, this whole process: with the service %s, without %s\n",
			perJob(cpuService-cpuStart), perJob(cpuDirect-cpuService))
	}
	return nil
}

// benchDirect measures the floor under the service: per job it fetches
// every source and asks every chunk from one client, as concurrently as the
// service may, through the same adapter and connection pool the service
// uses, with nothing recorded. Each chunk is sent as the service sends it:
// one paragraph and the previous one as overlap. It returns the median wall
// time of o.jobs such jobs and their phases, with the first fetch's start
// in place of the create.
func benchDirect(ctx context.Context, tl *benchTimeline, providerURL string, urls []string, o benchOptions, windows *benchWindows) (time.Duration, []benchPhases, error) {
	chats := slots.New(slots.Config{BaseURLs: map[int]string{2: providerURL + "/v1"}, PerSlotConcurrency: o.concurrency, MaxAttempts: 1})
	chat, err := chats.Chat("NEURAL_CLIENT_TYPE_PROVIDER_2", "gpt-4o-mini", "bench")
	if err != nil {
		return 0, nil, err
	}
	sources := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(urls)}}
	walls := make([]time.Duration, 0, o.jobs)
	phases := make([]benchPhases, 0, o.jobs)
	for range o.jobs {
		start := tl.reset()
		var wg sync.WaitGroup
		errs := make([]error, len(urls))
		for i, u := range urls {
			wg.Go(func() { errs[i] = benchDirectFile(ctx, sources, chat, u, o.chunks) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, nil, fmt.Errorf("direct run: %w", err)
		}
		wall := time.Since(start)
		walls = append(walls, wall)
		phases = append(phases, tl.phases(start, wall))
		windows.write("floor", tl, start, wall)
	}
	slices.Sort(walls)
	return walls[len(walls)/2], phases, nil
}

func benchDirectFile(ctx context.Context, sources *http.Client, chat provider.Chat, url string, chunks int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := sources.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	paragraphs := strings.Split(strings.TrimSpace(string(body)), "\n\n")
	var wg sync.WaitGroup
	errs := make([]error, len(paragraphs))
	for i, p := range paragraphs {
		if i > 0 {
			p = paragraphs[i-1] + "\n\n" + p
		}
		user := fmt.Sprintf("Document %q, part %d of %d:\n\n%s", path.Base(url), i+1, chunks, p)
		wg.Go(func() {
			_, errs[i] = chat.Complete(ctx, provider.ChatRequest{System: "Summarize.", User: user})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// benchWindows writes, per job, the two windows the overhead falls in:
// from the create (or the floor's first fetch) to the last provider call
// seen, and from the last answer written to the end seen by the client. A
// CPU profile cannot be cut by time; perf samples can (scripts/bench-windows.py).
type benchWindows struct {
	f    *os.File
	mono func(time.Time) int64
}

func openWindows(name string) (*benchWindows, error) {
	if name == "" {
		return nil, nil
	}
	mono, ok := monotonicClock()
	if !ok {
		return nil, fmt.Errorf("%w: --windows needs CLOCK_MONOTONIC (Linux)", errUsage)
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(f, "# run created last_call last_answer done (CLOCK_MONOTONIC ns)")
	return &benchWindows{f: f, mono: mono}, nil
}

// write records one job; a nil benchWindows records nothing.
func (w *benchWindows) write(run string, t *benchTimeline, created time.Time, wall time.Duration) {
	if w == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w.f, "%s %d %d %d %d\n", run, w.mono(created), w.mono(t.lastCall), w.mono(t.lastAnswer), w.mono(created.Add(wall)))
}

func (w *benchWindows) close() {
	if w != nil {
		w.f.Close()
	}
}

// benchTimeline records, for the job being measured, when the source
// server and the provider saw their first and last requests, so the
// overhead can be split into the stage it comes from.
type benchTimeline struct {
	mu                                                     sync.Mutex
	created                                                time.Time
	firstFetch, lastFetch, firstCall, lastCall, lastAnswer time.Time
}

func (t *benchTimeline) reset() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created = time.Now()
	t.firstFetch, t.lastFetch, t.firstCall, t.lastCall, t.lastAnswer = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return t.created
}

// mark sets *first if it is unset and *last always.
func (t *benchTimeline) mark(first, last *time.Time) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if first != nil && first.IsZero() {
		*first = now
	}
	*last = now
}

// benchPhases split one job's wall time: create → last source fetched,
// → first provider call (recognize, chunk, insert rows, hand-off),
// first → last provider call (the spread of call starts), and last
// answer → COMPLETE seen by the client (store answers, finalize, poll).
type benchPhases struct{ fetch, toFirstCall, callSpread, afterLastAnswer time.Duration }

func (t *benchTimeline) phases(created time.Time, wall time.Duration) benchPhases {
	t.mu.Lock()
	defer t.mu.Unlock()
	return benchPhases{
		fetch:           t.lastFetch.Sub(created),
		toFirstCall:     t.firstCall.Sub(t.lastFetch),
		callSpread:      t.lastCall.Sub(t.firstCall),
		afterLastAnswer: created.Add(wall).Sub(t.lastAnswer),
	}
}

func printPhases(w io.Writer, label string, ps []benchPhases) {
	median := func(get func(benchPhases) time.Duration) time.Duration {
		ds := make([]time.Duration, len(ps))
		for i, p := range ps {
			ds[i] = get(p)
		}
		slices.Sort(ds)
		return ds[len(ds)/2].Round(100 * time.Microsecond)
	}
	fmt.Fprintf(w, "%s: create→sources fetched %s, →first provider call %s, call-start spread %s, last answer→complete seen %s\n", label,
		median(func(p benchPhases) time.Duration { return p.fetch }),
		median(func(p benchPhases) time.Duration { return p.toFirstCall }),
		median(func(p benchPhases) time.Duration { return p.callSpread }),
		median(func(p benchPhases) time.Duration { return p.afterLastAnswer }))
}

// benchBudget and the paragraph size make each chunk one new paragraph
// plus the previous one as overlap.
const benchBudget = 400

func benchDocument(chunks int) string {
	var b strings.Builder
	for i := range chunks {
		fmt.Fprintf(&b, "Paragraph %d. ", i)
		for j := range 28 {
			fmt.Fprintf(&b, "Item %d costs %d units. ", j, i*j)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// benchJob creates a job and waits for its end on the job's event stream,
// as a client that wants the answer soon would, rather than polling.
func benchJob(ctx context.Context, c *client, body []byte) (time.Duration, int, error) {
	base, key := c.cfg.server, c.cfg.apiKey
	start := time.Now()
	var created struct{ ID string }
	if err := benchCall(ctx, "POST", base+"/v1/jobs", key, body, &created); err != nil {
		return 0, 0, err
	}
	end, err := c.follow(ctx, created.ID, func(progress) {})
	if err != nil {
		return 0, 0, fmt.Errorf("bench job %s: %w", created.ID, err)
	}
	wall := time.Since(start)
	if end.Status != "JOB_STATUS_COMPLETE" {
		return 0, 0, fmt.Errorf("bench job %s ended %s", created.ID, end.Status)
	}
	var res struct {
		Result struct{ Llm []json.RawMessage }
	}
	if err := benchCall(ctx, "GET", base+"/v1/jobs/"+created.ID+"/result", key, nil, &res); err != nil {
		return 0, 0, err
	}
	return wall, len(res.Result.Llm), nil
}

func benchCall(ctx context.Context, method, url, key string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// listenLocal serves h on a loopback port until the process ends.
func listenLocal(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, h) }()
	return "http://" + ln.Addr().String(), nil
}

func freeLocalAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// checkBenchBounds refuses options the service run by bench would refuse
// or fail on, naming the flag: more files than a job takes (the create
// answered 400 after the service had started), more chunks than a file
// may make (its one model row failed, no provider call was made, and bench
// reported nonsense phases with exit 0), more workers than River runs on a
// queue (the service never became ready), a latency past the provider
// timeout (every call timed out).
func checkBenchBounds(o benchOptions, cfg config.Config) error {
	maxConcurrency := river.QueueNumWorkersMax - cfg.FetchWorkers - cfg.RecognizeWorkers
	switch {
	case o.files > api.MaxSourceURLs:
		return fmt.Errorf("%w: --files: at most %d, the most sourceUrls one job takes", errUsage, api.MaxSourceURLs)
	case o.chunks > cfg.MaxChunksPerFile:
		return fmt.Errorf("%w: --chunks: at most %d, the most model rows one file may make (DOCJOBS_MAX_CHUNKS_PER_FILE)", errUsage, cfg.MaxChunksPerFile)
	case o.concurrency > maxConcurrency:
		return fmt.Errorf("%w: --concurrency: at most %d (River runs at most %d workers on the file queue, %d of them fetch and recognize)",
			errUsage, maxConcurrency, river.QueueNumWorkersMax, cfg.FetchWorkers+cfg.RecognizeWorkers)
	case o.latency >= cfg.ProviderTimeout:
		return fmt.Errorf("%w: --latency: under %s, the provider timeout, or every call times out", errUsage, cfg.ProviderTimeout)
	}
	return nil
}

// waitReady waits for the service at base to answer /readyz, or for
// serve to return (served, nil for none), whose error says why it never
// will: a wrong --database-url was "did not become ready within 30s", 30 s
// later.
func waitReady(ctx context.Context, base string, served <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-served:
			if err == nil {
				return errors.New("the service stopped before it was ready")
			}
			return fmt.Errorf("the service stopped before it was ready: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return errors.New("the service did not become ready within 30s")
}
