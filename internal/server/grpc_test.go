package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

func TestGRPCOnTheSamePort(t *testing.T) {
	env := startServer(t)
	conn, err := grpc.NewClient("passthrough:///"+env.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := docjobsv1.NewJobServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}

	t.Run("an authenticated call reaches the service as the account", func(t *testing.T) {
		j, err := client.CreateJob(as(keyAlice), &docjobsv1.CreateJobRequest{SourceUrls: []string{"https://example.test/a.txt"}})
		if err != nil {
			t.Fatalf("CreateJob: %v", err)
		}
		if j.GetAccountId() != "alice" {
			t.Errorf("account = %q", j.GetAccountId())
		}
	})
	tests := []struct {
		name        string
		call        func() error
		wantCode    codes.Code
		wantMessage string
	}{
		{"a call without a key is Unauthenticated", func() error {
			_, err := client.ListJobs(ctx, &docjobsv1.ListJobsRequest{})
			return err
		}, codes.Unauthenticated, "missing or invalid API key"},
		{"a call with an unknown key is Unauthenticated", func() error {
			_, err := client.ListJobs(as("dj_nobody"), &docjobsv1.ListJobsRequest{})
			return err
		}, codes.Unauthenticated, "missing or invalid API key"},
		{"a wrapped sentinel is mapped like on REST", func() error {
			_, err := client.GetJob(as(keyBob), &docjobsv1.GetJobRequest{Id: "job-1"})
			return err
		}, codes.NotFound, "not found"},
		{"a plain error is Internal with an id only", func() error {
			_, err := client.GetJobResult(as(keyAlice), &docjobsv1.GetJobResultRequest{Id: "boom"})
			return err
		}, codes.Internal, "internal error (id="},
		{"a panic is Internal with an id only", func() error {
			_, err := client.GetJobResult(as(keyAlice), &docjobsv1.GetJobResultRequest{Id: "panic"})
			return err
		}, codes.Internal, "internal error (id="},
		{"a stream without a key is Unauthenticated", func() error {
			_, err := uploadOverGRPC(ctx, client, "a", "x")
			return err
		}, codes.Unauthenticated, "missing or invalid API key"},
		{"a plain error in a stream is Internal with an id only", func() error {
			_, err := uploadOverGRPC(as(keyAlice), client, "boom", "x")
			return err
		}, codes.Internal, "internal error (id="},
		{"a panic in a stream is Internal with an id only", func() error {
			_, err := uploadOverGRPC(as(keyAlice), client, "panic", "x")
			return err
		}, codes.Internal, "internal error (id="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := status.Convert(tt.call())
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantMessage) {
				t.Errorf("got %v %q, want %v containing %q", st.Code(), st.Message(), tt.wantCode, tt.wantMessage)
			}
			if strings.Contains(st.Message(), "sqlite") || strings.Contains(st.Message(), "exploded") {
				t.Errorf("the cause leaked: %q", st.Message())
			}
		})
	}
	t.Run("an upload streams its pieces to the service as the account", func(t *testing.T) {
		up, err := uploadOverGRPC(as(keyAlice), client, "a.txt", "hello ", "", "world")
		if err != nil {
			t.Fatalf("UploadFile: %v", err)
		}
		if up.GetName() != "alice/a.txt" || up.GetSizeBytes() != int64(len("hello world")) {
			t.Errorf("upload = %v", up)
		}
	})
	t.Run("gRPC calls are counted by method and code", func(t *testing.T) {
		body := readBody(t, env.do("GET", "/metrics", "", "", nil))
		for _, want := range []string{
			`docjobs_grpc_requests_total{code="OK",method="/docjobs.v1.JobService/CreateJob"} 1`,
			`docjobs_grpc_requests_total{code="Unauthenticated",method="/docjobs.v1.JobService/ListJobs"} 2`,
			`docjobs_grpc_requests_total{code="Internal",method="/docjobs.v1.JobService/GetJobResult"} 2`,
			`docjobs_grpc_requests_total{code="Internal",method="/docjobs.v1.JobService/UploadFile"} 2`,
			`docjobs_grpc_requests_total{code="OK",method="/docjobs.v1.JobService/UploadFile"} 1`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func TestRESTOverH2C(t *testing.T) {
	env := startServer(t)
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	req, _ := http.NewRequest("GET", env.baseURL+"/v1/jobs", nil)
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("h2c request: %v", err)
	}
	body := readBody(t, resp)
	_ = resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("got %s %d %q: %s", resp.Proto, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// uploadOverGRPC sends name and then each piece as the messages of an
// upload stream.
func uploadOverGRPC(ctx context.Context, client docjobsv1.JobServiceClient, name string, pieces ...string) (*docjobsv1.UploadFileResponse, error) {
	stream, err := client.UploadFile(ctx)
	if err != nil {
		return nil, err
	}
	msgs := []*docjobsv1.UploadFileRequest{{Name: name}}
	for _, p := range pieces {
		msgs = append(msgs, &docjobsv1.UploadFileRequest{Content: []byte(p)})
	}
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			break // the server ended the stream; CloseAndRecv says why
		}
	}
	return stream.CloseAndRecv()
}

// grpcClient dials env over h2c; as returns a context that carries key.
func grpcClient(t *testing.T, env *testEnv) (client docjobsv1.JobServiceClient, conn *grpc.ClientConn, as func(ctx context.Context, key string) context.Context) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+env.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return docjobsv1.NewJobServiceClient(conn), conn, func(ctx context.Context, key string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
}

func TestAnUploadIdleForTheTimeoutIsCutOverBothTransports(t *testing.T) {
	const idle = 300 * time.Millisecond
	env := startServer(t, func(c *Config, _ *Deps) { c.IOIdleTimeout = idle })
	client, _, as := grpcClient(t, env)
	const wantMsg = "the upload sent nothing for 300ms"

	tests := []struct {
		name string
		// upload sends a name and some bytes, then, when stall, nothing
		// more; it returns the answer's code, message and HTTP status (0
		// over gRPC).
		upload   func(ctx context.Context, stall bool) (codes.Code, string, int)
		wantHTTP int
	}{
		{"REST", func(ctx context.Context, stall bool) (codes.Code, string, int) {
			pr, pw := io.Pipe()
			mw := multipart.NewWriter(pw)
			go func() {
				fw, _ := mw.CreateFormFile("file", "a.txt")
				for range 6 {
					_, _ = fw.Write(bytes.Repeat([]byte("x"), 1000))
					time.Sleep(idle / 3)
				}
				if stall {
					<-ctx.Done()
					pw.CloseWithError(ctx.Err())
					return
				}
				pw.CloseWithError(mw.Close())
			}()
			resp := env.do("POST", "/v1/jobs/upload", keyAlice, mw.FormDataContentType(), pr)
			m := decodeObject(t, readBody(t, resp))
			n, _ := m["code"].(json.Number) // absent on success
			code, _ := n.Int64()
			msg, _ := m["message"].(string)
			return codes.Code(code), msg, resp.StatusCode
		}, http.StatusRequestTimeout},
		{"gRPC", func(ctx context.Context, stall bool) (codes.Code, string, int) {
			stream, err := client.UploadFile(as(ctx, keyAlice))
			if err != nil {
				t.Fatal(err)
			}
			_ = stream.Send(&docjobsv1.UploadFileRequest{Name: "a.txt"})
			for range 6 {
				_ = stream.Send(&docjobsv1.UploadFileRequest{Content: bytes.Repeat([]byte("x"), 1000)})
				time.Sleep(idle / 3)
			}
			if !stall {
				_, err := stream.CloseAndRecv()
				st := status.Convert(err)
				return st.Code(), st.Message(), 0
			}
			// Neither more content nor the end of the stream: only the
			// server can end the call.
			err = stream.RecvMsg(&docjobsv1.UploadFileResponse{})
			st := status.Convert(err)
			return st.Code(), st.Message(), 0
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name+": a stalled upload is cut with DEADLINE_EXCEEDED", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			code, msg, httpCode := tt.upload(ctx, true)
			if code != codes.DeadlineExceeded || msg != wantMsg || httpCode != tt.wantHTTP {
				t.Errorf("got %v %q (HTTP %d), want %v %q (HTTP %d)", code, msg, httpCode, codes.DeadlineExceeded, wantMsg, tt.wantHTTP)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("cut after %s, want soon after the %s idle timeout", d, idle)
			}
		})
		t.Run(tt.name+": an upload that keeps moving is not cut however long it takes", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if code, msg, _ := tt.upload(ctx, false); code != codes.OK {
				t.Errorf("got %v %q, want OK (the whole upload took longer than the idle timeout)", code, msg)
			}
		})
	}
}

func TestGRPCNamesIgnoredInputInTheDocjobsWarningHeaderAsRESTDoes(t *testing.T) {
	env := startServer(t)
	client, _, as := grpcClient(t, env)
	withUnknown := func(m proto.Message, num protowire.Number) {
		r := m.ProtoReflect()
		r.SetUnknown(protowire.AppendVarint(protowire.AppendTag(r.GetUnknown(), num, protowire.VarintType), 1))
	}
	src := []string{"https://example.test/a.txt"}
	tests := []struct {
		name string
		req  func() *docjobsv1.CreateJobRequest
		rest string // the same request as JSON ("" for none: the binary form only)
		want string // "" for no header
	}{
		{"a request with nothing ignored has no header",
			func() *docjobsv1.CreateJobRequest { return &docjobsv1.CreateJobRequest{SourceUrls: src} },
			`{"sourceUrls":["https://example.test/a.txt"]}`, ""},
		{"an unknown consensus.mode number is named",
			func() *docjobsv1.CreateJobRequest {
				return &docjobsv1.CreateJobRequest{SourceUrls: src, Consensus: &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode(7).Enum()}}
			},
			`{"sourceUrls":["https://example.test/a.txt"],"consensus":{"mode":7}}`, "ignored: consensus.mode=7"},
		{"a webhookSecret without a webhookUrl is named",
			func() *docjobsv1.CreateJobRequest {
				return &docjobsv1.CreateJobRequest{SourceUrls: src, WebhookSecret: "s3cret"}
			},
			`{"sourceUrls":["https://example.test/a.txt"],"webhookSecret":"s3cret"}`, "ignored: webhookSecret"},
		{"dedupeBy without a responseSchema is named",
			func() *docjobsv1.CreateJobRequest {
				return &docjobsv1.CreateJobRequest{SourceUrls: src, Merge: &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{"id"}}}
			},
			`{"sourceUrls":["https://example.test/a.txt"],"merge":{"enabled":true,"dedupeBy":["id"]}}`, "ignored: merge.dedupeBy"},
		{"a repeated dedupeBy name is named by its place",
			func() *docjobsv1.CreateJobRequest {
				return &docjobsv1.CreateJobRequest{SourceUrls: src, ResponseSchema: "{}", Merge: &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{"id", "id"}}}
			},
			`{"sourceUrls":["https://example.test/a.txt"],"responseSchema":"{}","merge":{"enabled":true,"dedupeBy":["id","id"]}}`, "ignored: merge.dedupeBy[1]"},
		{"unknown binary fields are named by number, nested ones by their path",
			func() *docjobsv1.CreateJobRequest {
				req := &docjobsv1.CreateJobRequest{SourceUrls: src, Merge: &docjobsv1.MergeOptions{}}
				withUnknown(req, 99)
				withUnknown(req, 99)
				withUnknown(req.Merge, 98)
				return req
			}, "", "ignored: #99, merge.#98"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var header metadata.MD
			if _, err := client.CreateJob(as(context.Background(), keyAlice), tt.req(), grpc.Header(&header)); err != nil {
				t.Fatalf("CreateJob: %v", err)
			}
			if got := strings.Join(header.Get(GRPCWarningHeader), "|"); got != tt.want {
				t.Errorf("gRPC %s = %q, want %q", GRPCWarningHeader, got, tt.want)
			}
			if tt.rest == "" {
				return
			}
			resp := env.doJSON("POST", "/v1/jobs", keyAlice, tt.rest)
			_ = readBody(t, resp)
			if got := resp.Header.Get(WarningHeader); got != tt.want {
				t.Errorf("REST %s = %q, want %q", WarningHeader, got, tt.want)
			}
		})
	}
}

func TestGRPCHealthAndReflectionAnswerWithoutAKey(t *testing.T) {
	env := startServer(t)
	_, conn, _ := grpcClient(t, env)
	health := grpc_health_v1.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	check := func(service string) (grpc_health_v1.HealthCheckResponse_ServingStatus, codes.Code) {
		resp, err := health.Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: service})
		return resp.GetStatus(), status.Code(err)
	}
	tests := []struct {
		name     string
		notReady bool // the readiness check /readyz makes fails
		service  string
		want     grpc_health_v1.HealthCheckResponse_ServingStatus
		wantCode codes.Code
	}{
		{"the server is SERVING when ready", false, "", grpc_health_v1.HealthCheckResponse_SERVING, codes.OK},
		{"the job service is SERVING when ready", false, "docjobs.v1.JobService", grpc_health_v1.HealthCheckResponse_SERVING, codes.OK},
		{"the server is NOT_SERVING when /readyz would fail", true, "", grpc_health_v1.HealthCheckResponse_NOT_SERVING, codes.OK},
		{"the job service is NOT_SERVING when /readyz would fail", true, "docjobs.v1.JobService", grpc_health_v1.HealthCheckResponse_NOT_SERVING, codes.OK},
		{"an unknown service is NOT_FOUND", false, "no.such.Service", grpc_health_v1.HealthCheckResponse_UNKNOWN, codes.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ready error
			if tt.notReady {
				ready = errors.New("store down")
			}
			env.setReady(ready)
			defer env.setReady(nil)
			if got, code := check(tt.service); got != tt.want || code != tt.wantCode {
				t.Errorf("Check(%q) = %v, %v; want %v, %v", tt.service, got, code, tt.want, tt.wantCode)
			}
		})
	}
	t.Run("Watch sends the current status", func(t *testing.T) {
		w, err := health.Watch(ctx, &grpc_health_v1.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := w.Recv(); err != nil || resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
			t.Fatalf("first Watch answer = %v, %v; want SERVING", resp, err)
		}
	})
	t.Run("reflection lists the services", func(t *testing.T) {
		stream, err := grpc_reflection_v1.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&grpc_reflection_v1.ServerReflectionRequest{
			MessageRequest: &grpc_reflection_v1.ServerReflectionRequest_ListServices{},
		}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("reflection: %v", err)
		}
		var names []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		for _, want := range []string{"docjobs.v1.JobService", "grpc.health.v1.Health"} {
			if !slices.Contains(names, want) {
				t.Errorf("services %v lack %s", names, want)
			}
		}
	})
}
