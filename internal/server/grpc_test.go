package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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
