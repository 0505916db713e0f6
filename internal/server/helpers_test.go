package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/logtest"
)

// Keys of the two test accounts.
const (
	keyAlice = "dj_alice-key"
	keyBob   = "dj_bob-key"
)

// staticKeys is a KeyLookup over fixed keys, as DOCJOBS_API_KEYS gives them.
type staticKeys map[string]string // hex-free: hash string -> account

func newStaticKeys(keys map[string]string) staticKeys {
	m := staticKeys{}
	for key, account := range keys {
		m[string(auth.HashKey(key))] = account
	}
	return m
}

func (k staticKeys) AccountByKeyHash(_ context.Context, hash []byte) (string, error) {
	a, ok := k[string(hash)]
	if !ok {
		return "", job.ErrNotFound
	}
	return a, nil
}

// jobService is a small real JobService: jobs live in memory per account.
// Special ids trigger the error paths the edge must map.
type jobService struct {
	docjobsv1.UnimplementedJobServiceServer

	mu       sync.Mutex
	jobs     map[string]*docjobsv1.Job
	lastReq  *docjobsv1.CreateJobRequest
	blockGet chan struct{} // when set, the next GetJob waits for it to close
	started  chan struct{} // closed when that GetJob has started
	files    *diskFiles    // what DeleteFile deletes from
}

func newJobService() *jobService {
	return &jobService{jobs: map[string]*docjobsv1.Job{}}
}

func (s *jobService) CreateJob(ctx context.Context, req *docjobsv1.CreateJobRequest) (*docjobsv1.Job, error) {
	account, ok := auth.Account(ctx)
	if !ok {
		return nil, errors.New("no account in context")
	}
	if len(req.GetSourceUrls()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "sourceUrls: required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastReq = proto.Clone(req).(*docjobsv1.CreateJobRequest)
	j := &docjobsv1.Job{
		Id:         fmt.Sprintf("job-%d", len(s.jobs)+1),
		AccountId:  account,
		Title:      req.GetTitle(),
		Status:     docjobsv1.JobStatus_JOB_STATUS_NEW,
		SourceUrls: req.GetSourceUrls(),
		Consensus:  &docjobsv1.ConsensusOptions{},
	}
	if c := req.GetConsensus(); c != nil {
		j.Consensus.Mode = c.Mode
	}
	if j.Consensus.Mode == nil {
		j.Consensus.Mode = docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED.Enum()
	}
	s.jobs[j.Id] = j
	return j, nil
}

// blockNextGet makes the next GetJob wait until release is called.
func (s *jobService) blockNextGet() (started <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	block, startedCh := make(chan struct{}), make(chan struct{})
	s.blockGet, s.started = block, startedCh
	return startedCh, func() { close(block) }
}

// UploadFile counts the streamed bytes and names the account it ran as;
// a file named "panic" panics, one named "boom" fails with a raw error.
func (s *jobService) UploadFile(stream grpc.ClientStreamingServer[docjobsv1.UploadFileRequest, docjobsv1.UploadFileResponse]) error {
	account, _ := auth.Account(stream.Context())
	var name string
	var size int64
	for i := 0; ; i++ {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if i == 0 {
			name = msg.GetName()
		}
		size += int64(len(msg.GetContent()))
	}
	switch name {
	case "panic":
		panic("upload exploded")
	case "boom":
		return errors.New("sqlite: disk I/O error")
	}
	return stream.SendAndClose(&docjobsv1.UploadFileResponse{Name: account + "/" + name, SizeBytes: size})
}

func (s *jobService) lastRequest() *docjobsv1.CreateJobRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReq
}

func (s *jobService) GetJob(ctx context.Context, req *docjobsv1.GetJobRequest) (*docjobsv1.Job, error) {
	s.mu.Lock()
	block, started := s.blockGet, s.started
	s.blockGet = nil
	s.mu.Unlock()
	if block != nil {
		close(started)
		<-block
	}
	account, _ := auth.Account(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[req.GetId()]
	if !ok || j.GetAccountId() != account {
		// A plain sentinel, wrapped: the edge maps it to NotFound.
		return nil, fmt.Errorf("get job %s: %w", req.GetId(), job.ErrNotFound)
	}
	return j, nil
}

func (s *jobService) GetJobResult(_ context.Context, req *docjobsv1.GetJobResultRequest) (*docjobsv1.GetJobResultResponse, error) {
	switch req.GetId() {
	case "boom":
		// A raw infrastructure error: it must never reach a client.
		return nil, errors.New("sqlite: open /var/lib/docjobs/docjobs.db: disk I/O error")
	case "panic":
		panic("result exploded")
	case "busy":
		st, _ := status.New(codes.ResourceExhausted, "too many requests").WithDetails(
			&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
		return nil, st.Err()
	}
	return nil, status.Error(codes.NotFound, "job not found")
}

func (s *jobService) ListJobs(ctx context.Context, req *docjobsv1.ListJobsRequest) (*docjobsv1.ListJobsResponse, error) {
	account, _ := auth.Account(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &docjobsv1.ListJobsResponse{}
	for _, j := range s.jobs {
		if j.GetAccountId() == account && (req.GetStatusEq() == 0 || req.GetStatusEq() == j.GetStatus()) {
			resp.Jobs = append(resp.Jobs, j)
		}
	}
	return resp, nil
}

func (s *jobService) CancelJob(_ context.Context, _ *docjobsv1.CancelJobRequest) (*docjobsv1.Job, error) {
	return nil, job.ErrTerminal
}

// DeleteFile deletes an upload of the calling account from its diskFiles.
func (s *jobService) DeleteFile(ctx context.Context, req *docjobsv1.DeleteFileRequest) (*emptypb.Empty, error) {
	account, _ := auth.Account(ctx)
	d := s.files
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[req.GetId()]
	if !ok || f.AccountID != account {
		return nil, status.Error(codes.NotFound, "file not found")
	}
	delete(d.files, f.ID)
	if err := os.Remove(filepath.Join(d.dir, f.ID)); err != nil {
		return nil, fmt.Errorf("delete file: %w", err)
	}
	return &emptypb.Empty{}, nil
}

func (s *jobService) DeleteJob(_ context.Context, _ *docjobsv1.DeleteJobRequest) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// diskFiles is a Files that streams uploads to a directory, as blob storage
// does, and enforces the limit while copying.
type diskFiles struct {
	dir   string
	limit int64

	mu    sync.Mutex
	files map[string]job.File
	// onFirstRead, when set, runs on the first Read of an upload body.
	onFirstRead func()
	// onRead, when set, runs after every Read with the bytes read so far.
	onRead func(total int64)
}

// The real implementations satisfy what the edge consumes.
var (
	_ Files                      = (*api.Service)(nil)
	_ docjobsv1.JobServiceServer = (*api.Service)(nil)
)

func newDiskFiles(t testing.TB, limit int64) *diskFiles {
	t.Helper()
	return &diskFiles{dir: t.TempDir(), limit: limit, files: map[string]job.File{}}
}

func (d *diskFiles) StoreUpload(ctx context.Context, name string, body io.Reader) (job.File, string, error) {
	account, _ := auth.Account(ctx)
	d.mu.Lock()
	id := fmt.Sprintf("file-%d", len(d.files)+1)
	d.mu.Unlock()
	out, err := os.Create(filepath.Join(d.dir, id))
	if err != nil {
		return job.File{}, "", err
	}
	defer out.Close()
	n, err := io.Copy(out, &observedReader{r: io.LimitReader(body, d.limit+1), d: d})
	if err != nil {
		return job.File{}, "", fmt.Errorf("store upload: %w", err)
	}
	if n > d.limit {
		return job.File{}, "", fmt.Errorf("%w of %d bytes", api.ErrTooLarge, d.limit)
	}
	// Named as the service names it: the REST handler passes the client's name on.
	f := job.File{ID: id, AccountID: account, Name: api.UploadName(name), Size: n, ContentType: "text/plain; charset=utf-8"}
	d.mu.Lock()
	d.files[id] = f
	d.mu.Unlock()
	return f, "http://docjobs.test/v1/files/" + id, nil
}

// stored lists the ids of the files stored now, and whether each is on disk.
func (d *diskFiles) stored(t *testing.T) []string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	for id := range d.files {
		if _, err := os.Stat(filepath.Join(d.dir, id)); err != nil {
			t.Errorf("file %s is recorded but not on disk: %v", id, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (d *diskFiles) OpenFile(ctx context.Context, id string) (job.File, io.ReadCloser, error) {
	account, _ := auth.Account(ctx)
	d.mu.Lock()
	f, ok := d.files[id]
	d.mu.Unlock()
	if !ok || f.AccountID != account {
		return job.File{}, nil, job.ErrNotFound
	}
	r, err := os.Open(filepath.Join(d.dir, id))
	if err != nil {
		return job.File{}, nil, err
	}
	return f, r, nil
}

type observedReader struct {
	r     io.Reader
	d     *diskFiles
	n     int64
	first bool
}

func (o *observedReader) Read(p []byte) (int, error) {
	if !o.first {
		o.first = true
		if o.d.onFirstRead != nil {
			o.d.onFirstRead()
		}
	}
	n, err := o.r.Read(p)
	o.n += int64(n)
	if o.d.onRead != nil {
		o.d.onRead(o.n)
	}
	return n, err
}

// testEnv is a Server listening on loopback through Serve, as in production.
type testEnv struct {
	t       testing.TB
	srv     *Server
	svc     *jobService
	files   *diskFiles
	logs    *logtest.Buffer
	baseURL string
	addr    string
	ready   error
	readyMu sync.Mutex
	stop    func() error // cancels Serve and returns its result
}

type envOption func(*Config, *Deps)

func startServer(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return startServerOn(t, ln, opts...)
}

// startServerOn is startServer serving on ln, which it closes.
func startServerOn(t testing.TB, ln net.Listener, opts ...envOption) *testEnv {
	t.Helper()
	env := &testEnv{t: t, svc: newJobService(), logs: &logtest.Buffer{}}
	cfg := Config{UploadMaxBytes: DefaultUploadMaxBytes, ShutdownTimeout: 5 * time.Second}
	env.files = newDiskFiles(t, cfg.UploadMaxBytes)
	env.svc.files = env.files
	deps := Deps{
		Service: env.svc,
		Files:   env.files,
		Auth:    auth.NewAuthenticator(newStaticKeys(map[string]string{keyAlice: "alice", keyBob: "bob"})),
		Ready: func(context.Context) error {
			env.readyMu.Lock()
			defer env.readyMu.Unlock()
			return env.ready
		},
		Logger: slog.New(slog.NewJSONHandler(env.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(&cfg, &deps)
	}
	srv, err := New(cfg, deps)
	if err != nil {
		_ = ln.Close()
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	env.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(10 * time.Second):
				serveErr = errors.New("Serve did not return after cancel")
			}
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := env.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	env.srv = srv
	env.addr = ln.Addr().String()
	env.baseURL = "http://" + env.addr
	return env
}

func (e *testEnv) setReady(err error) {
	e.readyMu.Lock()
	defer e.readyMu.Unlock()
	e.ready = err
}

// do sends a request with the given bearer key ("" for none).
func (e *testEnv) do(method, path, key, contentType string, body io.Reader) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.baseURL+path, body)
	if err != nil {
		e.t.Fatalf("new request: %v", err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	e.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func (e *testEnv) doJSON(method, path, key, body string) *http.Response {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	return e.do(method, path, key, "application/json", r)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// decodeObject decodes a JSON object body keeping numbers exact.
func decodeObject(t *testing.T, body string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

// wantStatusBody checks an error body: exactly code, message and (on JSON
// endpoints) details.
func wantStatusBody(t *testing.T, resp *http.Response, httpCode int, code codes.Code, withDetails bool) map[string]any {
	t.Helper()
	body := readBody(t, resp)
	if resp.StatusCode != httpCode {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, httpCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	m := decodeObject(t, body)
	if got := m["code"]; got != json.Number(fmt.Sprint(int(code))) {
		t.Errorf("code = %v, want %d; body %s", got, code, body)
	}
	if msg, _ := m["message"].(string); msg == "" {
		t.Errorf("message is empty; body %s", body)
	}
	wantKeys := 2
	if withDetails {
		wantKeys = 3
		if _, ok := m["details"].([]any); !ok {
			t.Errorf("details is not an array; body %s", body)
		}
	} else if _, ok := m["details"]; ok {
		t.Errorf("details present; body %s", body)
	}
	if len(m) != wantKeys {
		t.Errorf("body has %d keys, want %d: %s", len(m), wantKeys, body)
	}
	return m
}
