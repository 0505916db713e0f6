package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// rawGRPC sends a gRPC call over h2c with body as the request stream, as a
// client that controls every byte would, and returns the status the server
// answered (from a trailers-only answer or the trailers) and how long the
// answer took. key "" sends no authorization.
func rawGRPC(t *testing.T, env *testEnv, method, key string, body io.Reader) (code codes.Code, msg string, took time.Duration) {
	t.Helper()
	code, msg, took, err := tryRawGRPC(env, method, key, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, msg, took
}

// tryRawGRPC is rawGRPC for another goroutine than the test's: it returns
// what went wrong.
func tryRawGRPC(env *testEnv, method, key string, body io.Reader) (code codes.Code, msg string, took time.Duration, err error) {
	return tryRawGRPCWith(context.Background(), env, method, key, nil, body)
}

// rawGRPCWith is rawGRPC with more request headers.
func rawGRPCWith(t *testing.T, env *testEnv, method, key string, header http.Header, body io.Reader) (code codes.Code, msg string, took time.Duration) {
	t.Helper()
	code, msg, took, err := tryRawGRPCWith(context.Background(), env, method, key, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, msg, took
}

// tryRawGRPCWith is tryRawGRPC with more request headers, sent under ctx:
// ending ctx resets the stream, as a gRPC client does at its deadline.
func tryRawGRPCWith(ctx context.Context, env *testEnv, method, key string, header http.Header, body io.Reader) (code codes.Code, msg string, took time.Duration, err error) {
	start := time.Now()
	resp, err := rawH2(ctx, env, method, key, header, body)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	h := resp.Header
	if h.Get("Grpc-Status") == "" { // not trailers-only: the status follows the messages
		_, _ = io.Copy(io.Discard, resp.Body)
		h = resp.Trailer
	}
	took = time.Since(start)
	var n int
	if _, err := fmt.Sscan(h.Get("Grpc-Status"), &n); err != nil {
		return 0, "", took, fmt.Errorf("%s: HTTP %d, no grpc-status in %v", method, resp.StatusCode, h)
	}
	msg, _ = url.PathUnescape(h.Get("Grpc-Message"))
	return codes.Code(n), msg, took, nil
}

// rawH2 posts body to method over h2c as a gRPC call (content type
// application/grpc unless header says otherwise) and returns the answer.
func rawH2(ctx context.Context, env *testEnv, method, key string, header http.Header, body io.Reader) (*http.Response, error) {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protocols}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, "POST", env.baseURL+method, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, vv := range header {
		req.Header[k] = vv
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return resp, nil
}

// grpcFrame is one length-prefixed, uncompressed gRPC message of length n
// whose first len(msg) bytes are msg.
func grpcFrame(n int, msg []byte) []byte {
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(n))
	return append(b, msg...)
}

// stalledBody sends prefix and then nothing, until the test ends.
func stalledBody(t *testing.T, prefix []byte) io.Reader {
	t.Helper()
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write(prefix) }()
	t.Cleanup(func() { _ = pw.Close() })
	return pr
}

// grpcCount is docjobs_grpc_requests_total of method and code.
func grpcCount(t *testing.T, env *testEnv, method string, code codes.Code) float64 {
	t.Helper()
	m := gathered(t, env.srv.deps.Registry, "docjobs_grpc_requests_total",
		map[string]string{"method": "/docjobs.v1.JobService/" + method, "code": code.String()})
	return m.GetCounter().GetValue()
}

// waitForGRPCLog waits for a "grpc request" log line of method; it fails
// the test unless one comes within 5 seconds and says code.
func waitForGRPCLog(t *testing.T, env *testEnv, method string, code codes.Code) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, rec := range env.logs.Records(t) {
			if rec["msg"] == "grpc request" && rec["method"] == "/docjobs.v1.JobService/"+method && rec["code"] == code.String() {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no grpc request log line for %s with code %s:\n%s", method, code, env.logs.String())
}

func TestAGRPCCallIsAuthenticatedBeforeItsMessageIsRead(t *testing.T) {
	env := startServer(t)
	client, _, as := grpcClient(t, env)
	const unauthenticated = "missing or invalid API key"

	t.Run("a caller without a key is answered without sending its message", func(t *testing.T) {
		code, msg, took := rawGRPC(t, env, "/docjobs.v1.JobService/CreateJob", "", stalledBody(t, grpcFrame(100, []byte("x"))))
		if code != codes.Unauthenticated || msg != unauthenticated {
			t.Errorf("got %v %q, want Unauthenticated %q", code, msg, unauthenticated)
		}
		if took > 2*time.Second {
			t.Errorf("answered after %s, want at once", took)
		}
	})
	t.Run("a caller with a wrong key is answered without sending its message", func(t *testing.T) {
		code, msg, _ := rawGRPC(t, env, "/docjobs.v1.JobService/GetJob", "dj_nobody", stalledBody(t, nil))
		if code != codes.Unauthenticated || msg != unauthenticated {
			t.Errorf("got %v %q, want Unauthenticated %q", code, msg, unauthenticated)
		}
	})
	big := &docjobsv1.CreateJobRequest{Title: strings.Repeat("x", 5<<20)}
	t.Run("a message above the limit without a key is Unauthenticated, as over REST", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.CreateJob(ctx, big)
		if st := status.Convert(err); st.Code() != codes.Unauthenticated || st.Message() != unauthenticated {
			t.Errorf("got %v %q, want Unauthenticated %q", st.Code(), st.Message(), unauthenticated)
		}
	})
	t.Run("a message above the limit with a key is refused in the service's words", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.CreateJob(as(ctx, keyAlice), big)
		want := "request message exceeds the limit of 4194304 bytes"
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != want {
			t.Errorf("got %v %q, want ResourceExhausted %q", st.Code(), st.Message(), want)
		}
	})
	t.Run("a message at the limit is read", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		atLimit := &docjobsv1.CreateJobRequest{SourceUrls: []string{"https://example.test/a.txt"}}
		// The title's tag and 4-byte length prefix take 5 bytes.
		atLimit.Title = strings.Repeat("x", 4<<20-proto.Size(atLimit)-5)
		if n := proto.Size(atLimit); n != 4<<20 {
			t.Fatalf("the message is %d bytes, want exactly 4 MiB", n)
		}
		// The test service answers with the title: let the client take it.
		_, err := client.CreateJob(as(ctx, keyAlice), atLimit, grpc.MaxCallRecvMsgSize(8<<20))
		if err != nil {
			t.Errorf("CreateJob: %v", err)
		}
	})
	t.Run("a health check's message is bounded far lower, as it needs no key", func(t *testing.T) {
		code, msg, _ := rawGRPC(t, env, "/grpc.health.v1.Health/Check", "", bytes.NewReader(grpcFrame(1<<20, nil)))
		if want := "request message exceeds the limit of 65536 bytes"; code != codes.ResourceExhausted || msg != want {
			t.Errorf("got %v %q, want ResourceExhausted %q", code, msg, want)
		}
	})
	t.Run("a message marked compressed without an encoding is the client's fault", func(t *testing.T) {
		frame := grpcFrame(0, nil)
		frame[0] = 1 // compressed, with no grpc-encoding: grpc-go says Internal
		code, msg, _ := rawGRPC(t, env, "/docjobs.v1.JobService/ListJobs", keyAlice, bytes.NewReader(frame))
		if want := "the request message is marked compressed, but the call names no grpc-encoding"; code != codes.InvalidArgument || msg != want {
			t.Errorf("got %v %q, want InvalidArgument %q", code, msg, want)
		}
		if got := grpcCount(t, env, "ListJobs", codes.InvalidArgument); got != 1 {
			t.Errorf("ListJobs InvalidArgument = %v, want 1", got)
		}
	})
	t.Run("a call grpc-go refuses itself is counted too", func(t *testing.T) {
		frame := grpcFrame(0, nil)
		frame[0] = 1
		if code, _, _ := rawGRPCWith(t, env, "/docjobs.v1.JobService/ListJobs", keyAlice,
			http.Header{"Grpc-Encoding": {"gzip"}}, bytes.NewReader(frame)); code != codes.Unimplemented {
			t.Errorf("a gzip message: got %v, want grpc-go's Unimplemented (no decompressor)", code)
		}
		if got := grpcCount(t, env, "ListJobs", codes.Unimplemented); got != 1 {
			t.Errorf("ListJobs Unimplemented = %v, want 1", got)
		}
	})
	t.Run("refused calls are counted and logged as the interceptors did", func(t *testing.T) {
		if got := grpcCount(t, env, "CreateJob", codes.Unauthenticated); got != 2 {
			t.Errorf("CreateJob Unauthenticated = %v, want 2", got)
		}
		if got := grpcCount(t, env, "GetJob", codes.Unauthenticated); got != 1 {
			t.Errorf("GetJob Unauthenticated = %v, want 1", got)
		}
		if got := grpcCount(t, env, "CreateJob", codes.ResourceExhausted); got != 1 {
			t.Errorf("CreateJob ResourceExhausted = %v, want 1", got)
		}
		var found bool
		for _, rec := range env.logs.Records(t) {
			found = found || rec["msg"] == "grpc request" && rec["code"] == "ResourceExhausted" &&
				rec["method"] == "/docjobs.v1.JobService/CreateJob" && rec["account_id"] == "alice"
		}
		if !found {
			t.Errorf("no log line names the refused CreateJob of alice:\n%s", env.logs.String())
		}
	})
}

func TestAGRPCRequestMessageMustArriveWithinTheReadTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	env := startServer(t, func(c *Config, _ *Deps) { c.JSONReadTimeout = timeout })
	const want = "the request message did not arrive within 300ms"

	for _, tt := range []struct {
		name string
		sent []byte
	}{
		{"a stream that sends nothing is cut", nil},
		{"a message that stops half way is cut", grpcFrame(100, []byte("half"))},
		{"a message not followed by the end of the stream is cut", grpcFrame(0, nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, msg, took := rawGRPC(t, env, "/docjobs.v1.JobService/ListJobs", keyAlice, stalledBody(t, tt.sent))
			if code != codes.DeadlineExceeded || msg != want {
				t.Errorf("got %v %q, want DeadlineExceeded %q", code, msg, want)
			}
			if took > 3*time.Second {
				t.Errorf("cut after %s, want soon after %s", took, timeout)
			}
		})
	}
	t.Run("a message that arrives in time is served", func(t *testing.T) {
		pr, pw := io.Pipe()
		go func() {
			frame := grpcFrame(0, nil)
			_, _ = pw.Write(frame[:2])
			time.Sleep(timeout / 3)
			_, _ = pw.Write(frame[2:])
			_ = pw.Close()
		}()
		if code, msg, _ := rawGRPC(t, env, "/docjobs.v1.JobService/ListJobs", keyAlice, pr); code != codes.OK {
			t.Errorf("got %v %q, want OK", code, msg)
		}
	})
	t.Run("the cut calls are counted", func(t *testing.T) {
		if got := grpcCount(t, env, "ListJobs", codes.DeadlineExceeded); got != 3 {
			t.Errorf("ListJobs DeadlineExceeded = %v, want 3", got)
		}
	})
}

// downloadEnv serves the real service with idle as IOIdleTimeout, holding
// one uploaded file of size random bytes, and a client whose receive
// windows are the smallest grpc-go allows, so that a client that stops
// reading soon stops the server's sends.
func downloadEnv(t *testing.T, idle time.Duration, size int) (env *testEnv, client docjobsv1.JobServiceClient, fileID string) {
	t.Helper()
	env = startServer(t, withService(t, api.Config{}), func(c *Config, _ *Deps) { c.IOIdleTimeout = idle })
	content := make([]byte, size)
	_, _ = rand.Read(content)
	ct, body := multipartBody(t, nil, "file", "big.bin", string(content))
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	u, _ := decodeObject(t, readBody(t, resp))["url"].(string)
	if resp.StatusCode != 200 || u == "" {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	conn, err := grpc.NewClient("passthrough:///"+env.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return env, docjobsv1.NewJobServiceClient(conn), u[strings.LastIndex(u, "/")+1:]
}

// getFile opens a download of id as alice and reads its first message.
func getFile(t *testing.T, ctx context.Context, client docjobsv1.JobServiceClient, id string) grpc.ServerStreamingClient[httpbody.HttpBody] {
	t.Helper()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+keyAlice)
	stream, err := client.GetFile(ctx, &docjobsv1.GetFileRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("first message: %v", err)
	}
	return stream
}

// readAll reads the rest of a download, pausing pause before each message.
func readAll(stream grpc.ServerStreamingClient[httpbody.HttpBody], pause time.Duration) error {
	for {
		time.Sleep(pause)
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func TestAGRPCDownloadWhoseReaderStallsIsCut(t *testing.T) {
	const idle = 500 * time.Millisecond
	env, client, id := downloadEnv(t, idle, 8<<20)

	t.Run("a reader that keeps reading is not cut however long it takes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		// The deadline moves at most every idle/2 (idleDeadline): a pause
		// well under the other half is progress.
		if err := readAll(getFile(t, ctx, client, id), idle/6); err != nil {
			t.Errorf("download: %v", err)
		}
		if d := time.Since(start); d < idle {
			t.Fatalf("the download took %s, less than the idle timeout: the test proves nothing", d)
		}
		waitForGRPCLog(t, env, "GetFile", codes.OK)
	})
	t.Run("a reader that stops reading is cut", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream := getFile(t, ctx, client, id)
		time.Sleep(5 * idle)
		if err := readAll(stream, 0); err == nil {
			t.Fatalf("the whole file arrived after the reader stalled for %s", 5*idle)
		}
		waitForGRPCLog(t, env, "GetFile", codes.DeadlineExceeded)
		if got := grpcCount(t, env, "GetFile", codes.DeadlineExceeded); got != 1 {
			t.Errorf("GetFile DeadlineExceeded = %v, want 1", got)
		}
		if !strings.Contains(env.logs.String(), "the client read nothing of the answer for 500ms") {
			t.Errorf("the log does not say why the download was cut:\n%s", env.logs.String())
		}
	})
}

func TestAGRPCDownloadTheClientEndsIsCountedWithTheClientsCode(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(ctx context.Context) (context.Context, context.CancelFunc)
		want codes.Code
	}{
		{"a client that cancels is Canceled", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithCancel(ctx)
		}, codes.Canceled},
		{"a client whose deadline passes is DeadlineExceeded", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 500*time.Millisecond)
		}, codes.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, client, id := downloadEnv(t, time.Minute, 4<<20)
			ctx, cancel := tt.end(context.Background())
			defer cancel()
			stream := getFile(t, ctx, client, id)
			if tt.want == codes.Canceled {
				cancel()
			}
			_ = readAll(stream, time.Second) // the deadline passes while the server waits
			waitForGRPCLog(t, env, "GetFile", tt.want)
			if got := grpcCount(t, env, "GetFile", tt.want); got != 1 {
				t.Errorf("GetFile %s = %v, want 1", tt.want, got)
			}
		})
	}
}

// lookedUp is a KeyLookup that tells when a key was looked up.
type lookedUp struct {
	staticKeys
	once sync.Once
	done chan struct{}
}

func (l *lookedUp) AccountByKeyHash(ctx context.Context, hash []byte) (string, error) {
	l.once.Do(func() { close(l.done) })
	return l.staticKeys.AccountByKeyHash(ctx, hash)
}

func TestShutdownEndsStreamsThatWaitForTheirClient(t *testing.T) {
	keys := &lookedUp{staticKeys: newStaticKeys(map[string]string{keyAlice: "alice"}), done: make(chan struct{})}
	// ShutdownTimeout 5s, JSONReadTimeout 30s
	env := startServer(t, func(_ *Config, d *Deps) { d.Auth = auth.NewAuthenticator(keys) })
	_, conn, _ := grpcClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	type answer struct {
		code codes.Code
		msg  string
		err  error
	}
	stalled := make(chan answer, 1)
	body := stalledBody(t, nil)
	go func() {
		code, msg, _, err := tryRawGRPC(env, "/docjobs.v1.JobService/ListJobs", keyAlice, body)
		stalled <- answer{code, msg, err}
	}()
	<-keys.done // the call is authenticated: the server now waits for its message

	watch, err := grpc_health_v1.NewHealthClient(conn).Watch(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("first watch answer: %v, %v", first, err)
	}
	refl, err := grpc_reflection_v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&grpc_reflection_v1.ServerReflectionRequest{
		MessageRequest: &grpc_reflection_v1.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := refl.Recv(); err != nil {
		t.Fatalf("reflection: %v", err)
	}

	start := time.Now()
	if err := env.stop(); err != nil {
		t.Errorf("Serve = %v, want nil: nothing was in flight but two open streams", err)
	}
	// Waiting for the streams would take the 5 s shutdown timeout; a loaded
	// machine's CI run took 1.03 s without waiting.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown took %s, want well under the 5 s shutdown timeout", d)
	}
	next, err := watch.Recv()
	if err != nil || next.GetStatus() != grpc_health_v1.HealthCheckResponse_NOT_SERVING {
		t.Errorf("watch answer at shutdown: %v, %v; want NOT_SERVING", next, err)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("watch end: %v, want Unavailable", err)
	}
	if _, err := refl.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("reflection end: %v, want Unavailable", err)
	}
	if a := <-stalled; a.err != nil || a.code != codes.Unavailable || a.msg != "the server is shutting down" {
		t.Errorf("a request whose message had not arrived: %v %q %v, want Unavailable %q", a.code, a.msg, a.err, "the server is shutting down")
	}
}

func TestADefaultGRPCClientGetsTheServicesMessageForAResultAboveItsLimit(t *testing.T) {
	rs := newRealService(t, api.Config{MaxResultMessageBytes: GRPCMaxAnswerBytes})
	env := startServer(t, func(_ *Config, d *Deps) { d.Service, d.Files = rs.svc, rs.svc })
	client, _, as := grpcClient(t, env) // grpc-go's default receive limit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	small := rs.create(t, "alice", resultJob{name: "under the limit", files: []func(j *job.Job, i int) store.OCRDone{
		ocrDone(strings.Repeat("a", 3<<20))}})
	large := rs.create(t, "alice", resultJob{name: "over the limit", files: []func(j *job.Job, i int) store.OCRDone{
		ocrDone(strings.Repeat("a", 5<<20))}})

	if _, err := client.GetJobResult(as(ctx, keyAlice), &docjobsv1.GetJobResultRequest{Id: small}); err != nil {
		t.Errorf("a result under 4 MiB: %v", err)
	}
	_, err := client.GetJobResult(as(ctx, keyAlice), &docjobsv1.GetJobResultRequest{Id: large})
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "read it from GET /v1/jobs/"+large+"/result") {
		t.Errorf("a result over 4 MiB: %v %q, want ResourceExhausted naming the REST result", st.Code(), st.Message())
	}
}

const reflectionMethod = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"

// grpcCodes is docjobs_grpc_requests_total of the full method by code.
func grpcCodes(t *testing.T, env *testEnv, fullMethod string) map[string]float64 {
	t.Helper()
	families, err := env.srv.deps.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "docjobs_grpc_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == fullMethod {
				got[labels["code"]] += m.GetCounter().GetValue()
			}
		}
	}
	return got
}

// symbolRequest asks reflection for a symbol of n bytes, which it does not
// know: its answer echoes the request.
func symbolRequest(n int) *grpc_reflection_v1.ServerReflectionRequest {
	return &grpc_reflection_v1.ServerReflectionRequest{MessageRequest: &grpc_reflection_v1.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: strings.Repeat("x", n)}}
}

// smallWindowConn is a gRPC connection whose receive windows are the
// smallest grpc-go allows, so that a client that stops reading soon stops
// the server's sends.
func smallWindowConn(t *testing.T, env *testEnv) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+env.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// stallReflection opens a reflection stream on conn and sends requests
// whose answers (about 60 KB each) pass the client's 64 KiB window, and
// reads none: the server's write of the answers then waits on the client.
func stallReflection(t *testing.T, ctx context.Context, conn *grpc.ClientConn) grpc.BidiStreamingClient[grpc_reflection_v1.ServerReflectionRequest, grpc_reflection_v1.ServerReflectionResponse] {
	t.Helper()
	stream, err := grpc_reflection_v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := stream.Send(symbolRequest(60_000)); err != nil {
			t.Fatal(err)
		}
	}
	return stream
}

func TestAReflectionStreamNeedsNoKeyAndIsBoundedAsAHealthCheck(t *testing.T) {
	env := startServer(t)
	_, conn, _ := grpcClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func(t *testing.T) grpc.BidiStreamingClient[grpc_reflection_v1.ServerReflectionRequest, grpc_reflection_v1.ServerReflectionResponse] {
		t.Helper()
		stream, err := grpc_reflection_v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return stream
	}

	t.Run("a request under the keyless limit is answered, as many as the client sends", func(t *testing.T) {
		stream := open(t)
		for range 3 {
			if err := stream.Send(symbolRequest(60_000)); err != nil {
				t.Fatal(err)
			}
			resp, err := stream.Recv()
			if err != nil || resp.GetErrorResponse().GetErrorCode() != int32(codes.NotFound) {
				t.Fatalf("answer %v, %v; want reflection's NotFound for an unknown symbol", resp.GetErrorResponse(), err)
			}
		}
		_ = stream.CloseSend()
		if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
			t.Errorf("end: %v, want io.EOF", err)
		}
	})
	t.Run("a request above it is refused before it is read", func(t *testing.T) {
		stream := open(t)
		if err := stream.Send(symbolRequest(100 << 10)); err != nil {
			t.Fatal(err)
		}
		_, err := stream.Recv()
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != "request message exceeds the limit of 65536 bytes" {
			t.Errorf("got %v %q, want ResourceExhausted %q", st.Code(), st.Message(), "request message exceeds the limit of 65536 bytes")
		}
	})
	t.Run("so is a length prefix above it, after a request that was answered", func(t *testing.T) {
		list, err := proto.Marshal(&grpc_reflection_v1.ServerReflectionRequest{
			MessageRequest: &grpc_reflection_v1.ServerReflectionRequest_ListServices{}})
		if err != nil {
			t.Fatal(err)
		}
		body := stalledBody(t, append(grpcFrame(len(list), list), grpcFrame(2<<30, []byte("x"))...))
		code, msg, took := rawGRPC(t, env, reflectionMethod, "", body)
		if code != codes.ResourceExhausted || msg != "request message exceeds the limit of 65536 bytes" {
			t.Errorf("got %v %q, want ResourceExhausted", code, msg)
		}
		if took > 2*time.Second {
			t.Errorf("answered after %s, want at once", took)
		}
	})
	t.Run("the refusals are counted as what the client got", func(t *testing.T) {
		if got := grpcCodes(t, env, reflectionMethod)[codes.ResourceExhausted.String()]; got != 2 {
			t.Errorf("reflection ResourceExhausted = %v, want 2", got)
		}
	})
}

func TestAKeylessAnswerNobodyReadsIsCut(t *testing.T) {
	const idle = 500 * time.Millisecond
	env := startServer(t, func(c *Config, _ *Deps) { c.IOIdleTimeout = idle })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream := stallReflection(t, ctx, smallWindowConn(t, env))
	time.Sleep(5 * idle)
	var answers int
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
		answers++
	}
	if answers == 4 {
		t.Errorf("all 4 answers arrived after the client read nothing for %s", 5*idle)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(env.logs.String(), `"msg":"grpc answer cut"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no answer cut logged:\n%s", env.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(env.logs.String(), "the client read nothing of the answer for 500ms") {
		t.Errorf("the log does not say why the answer was cut:\n%s", env.logs.String())
	}
}

func TestAKeylessAnswerThatWaitsBetweenWritesIsNotCut(t *testing.T) {
	// A Health.Watch writes when the status changes, minutes apart: the
	// idle rule counts only the time a write waits on the client.
	const idle = 300 * time.Millisecond
	env := startServer(t, func(c *Config, _ *Deps) { c.IOIdleTimeout = idle })
	_, conn, _ := grpcClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	watch, err := grpc_health_v1.NewHealthClient(conn).Watch(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Fatalf("first watch answer: %v, %v", first, err)
	}
	env.setReady(errors.New("store down"))
	// The watch checks every healthWatchInterval (5 s): far past idle.
	next, err := watch.Recv()
	if err != nil || next.GetStatus() != grpc_health_v1.HealthCheckResponse_NOT_SERVING {
		t.Errorf("watch answer after %s: %v, %v; want NOT_SERVING", healthWatchInterval, next, err)
	}
}

func TestShutdownDoesNotWaitForAKeylessAnswerNobodyReads(t *testing.T) {
	env := startServer(t) // IOIdleTimeout 1m, ShutdownTimeout 5s
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stallReflection(t, ctx, smallWindowConn(t, env))
	time.Sleep(300 * time.Millisecond) // the answers fill the window

	start := time.Now()
	if err := env.stop(); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if d := time.Since(start); d > keylessShutdownGrace+time.Second {
		t.Errorf("shutdown took %s, want about %s at most", d, keylessShutdownGrace)
	}
	var logged bool
	for _, rec := range env.logs.Records(t) {
		logged = logged || rec["msg"] == "grpc request" && rec["method"] == reflectionMethod && rec["code"] == "Unavailable"
	}
	if !logged || !strings.Contains(env.logs.String(), "the server is shutting down and the client read nothing of the answer for 1s") {
		t.Errorf("the cut stream is not logged Unavailable for the shutdown:\n%s", env.logs.String())
	}
}

func TestWhatGRPCGoRefusesFromTheHeadersIsAnsweredAloneAndCounted(t *testing.T) {
	// A rate of one call and no more, so that a call charged to alice shows.
	env := startServer(t, func(c *Config, _ *Deps) { c.AccountRate, c.AccountBurst = 0.001, 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("a content type gRPC does not know is 415 with a key or without", func(t *testing.T) {
		for _, key := range []string{keyAlice, ""} {
			for _, ct := range []string{"application/grpc-web", "application/grpcxyz"} {
				resp, err := rawH2(ctx, env, "/docjobs.v1.JobService/ListJobs", key, http.Header{"Content-Type": {ct}}, bytes.NewReader(grpcFrame(0, nil)))
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Grpc-Status") != "" {
					t.Errorf("key %q, %s: HTTP %d grpc-status %q; want grpc-go's 415 and no gRPC status",
						key, ct, resp.StatusCode, resp.Header.Get("Grpc-Status"))
				}
			}
		}
		got := grpcCodes(t, env, "/docjobs.v1.JobService/ListJobs")
		if got["OK"] != 0 || got["Unknown"] != 4 {
			t.Errorf("counted %v, want 4 Unknown (what a gRPC client makes of a 415) and no OK", got)
		}
		if !strings.Contains(env.logs.String(), `"http_status":415`) {
			t.Errorf("the log does not name the HTTP status:\n%s", env.logs.String())
		}
	})
	t.Run("a malformed grpc-timeout or binary header is InvalidArgument with a key or without", func(t *testing.T) {
		for _, tt := range []struct {
			header http.Header
			want   string
		}{
			{http.Header{"Grpc-Timeout": {"abc"}}, `malformed grpc-timeout "abc"`},
			{http.Header{"Grpc-Timeout": {"-5S"}}, `malformed grpc-timeout "-5S"`},
			{http.Header{"Grpc-Timeout": {"123456789S"}}, `malformed grpc-timeout "123456789S"`},
			{http.Header{"X-Trace-Bin": {"!!!"}}, `malformed binary metadata in header "x-trace-bin"`},
		} {
			for _, key := range []string{keyAlice, ""} {
				code, msg, _ := rawGRPCWith(t, env, "/docjobs.v1.JobService/ListJobs", key, tt.header, bytes.NewReader(grpcFrame(0, nil)))
				if code != codes.InvalidArgument || msg != tt.want {
					t.Errorf("%v, key %q: got %v %q, want InvalidArgument %q", tt.header, key, code, msg, tt.want)
				}
			}
		}
	})
	t.Run("none of them was charged to the account", func(t *testing.T) {
		code, msg, _ := rawGRPC(t, env, "/docjobs.v1.JobService/ListJobs", keyAlice, bytes.NewReader(grpcFrame(0, nil)))
		if code != codes.OK {
			t.Errorf("alice's one call: %v %q, want OK", code, msg)
		}
	})
}

func TestAGRPCRequestStillArrivingAtTheCallsDeadlineIsDeadlineExceeded(t *testing.T) {
	env := startServer(t) // JSONReadTimeout 30s
	t.Run("the client resets the stream at its deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, _, _, err := tryRawGRPCWith(ctx, env, "/docjobs.v1.JobService/ListJobs", keyAlice,
			http.Header{"Grpc-Timeout": {"300m"}}, stalledBody(t, grpcFrame(100, []byte("x"))))
		if err == nil {
			t.Log("the answer came before the client's reset")
		}
		waitForGRPCLog(t, env, "ListJobs", codes.DeadlineExceeded)
		if got := grpcCodes(t, env, "/docjobs.v1.JobService/ListJobs"); got["Canceled"] != 0 {
			t.Errorf("counted %v, want no Canceled", got)
		}
	})
	t.Run("a client that does not reset is answered at the deadline, not the read timeout", func(t *testing.T) {
		code, _, took := rawGRPCWith(t, env, "/docjobs.v1.JobService/ListJobs", keyAlice,
			http.Header{"Grpc-Timeout": {"300m"}}, stalledBody(t, grpcFrame(100, []byte("x"))))
		if code != codes.DeadlineExceeded || took > 3*time.Second {
			t.Errorf("got %v after %s, want DeadlineExceeded soon after 300ms", code, took)
		}
	})
}
