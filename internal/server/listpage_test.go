package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
)

// largeCreateBody is a create at the prompt limits: 16 prompts of 64 KiB,
// about 1 MiB that every listing of the job echoes.
func largeCreateBody(t *testing.T, idem string) string {
	t.Helper()
	prompts := make([]string, 16)
	for i := range prompts {
		prompts[i] = strings.Repeat(string(rune('a'+i)), 64<<10)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(limitsCreateBody), &body); err != nil {
		t.Fatal(err)
	}
	body["prompts"] = prompts
	if idem != "" {
		body["idempotencyKey"] = idem
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Five jobs of a MiB each list through a gRPC client's default 4 MiB
// receive limit, and in REST pages of a few MiB, whatever pageSize asks:
// a page ends early with its nextPageToken.
func TestListPagesOfLargeJobsFitADefaultGRPCClientAndRESTPagesOn(t *testing.T) {
	env := startServer(t, withService(t, api.Config{}))
	var want []string // newest first
	for range 5 {
		resp := env.doJSON("POST", "/v1/jobs", keyAlice, largeCreateBody(t, ""))
		body := readBody(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("create: %d %s", resp.StatusCode, body)
		}
		var j struct{ ID string }
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatal(err)
		}
		want = append([]string{j.ID}, want...)
	}

	for _, pageSize := range []int32{0, 4, 100} {
		t.Run(fmt.Sprintf("gRPC, pageSize %d", pageSize), func(t *testing.T) {
			client, _, as := grpcClient(t, env)
			var got []string
			token := ""
			for pages := 0; pages < 10; pages++ {
				page, err := client.ListJobs(as(context.Background(), keyAlice),
					&docjobsv1.ListJobsRequest{PageSize: pageSize, PageToken: token})
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				for _, j := range page.GetJobs() {
					got = append(got, j.GetId())
				}
				if token = page.GetNextPageToken(); token == "" {
					break
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("paged through %v, want %v", got, want)
			}
		})
		t.Run(fmt.Sprintf("REST, pageSize %d", pageSize), func(t *testing.T) {
			var got []string
			token := ""
			for pages := 0; pages < 10; pages++ {
				q := url.Values{"pageToken": {token}}
				if pageSize != 0 {
					q.Set("pageSize", fmt.Sprint(pageSize))
				}
				resp := env.doJSON("GET", "/v1/jobs?"+q.Encode(), keyAlice, "")
				body := readBody(t, resp)
				if resp.StatusCode != 200 {
					t.Fatalf("page %d: %d %.200s", pages, resp.StatusCode, body)
				}
				var page struct {
					Jobs          []struct{ ID string }
					NextPageToken string
				}
				if err := json.Unmarshal([]byte(body), &page); err != nil {
					t.Fatal(err)
				}
				if len(page.Jobs) == 0 || (len(page.Jobs) > 1 && len(body) > api.DefaultMaxListPageBytes+64<<10) {
					t.Fatalf("page %d: %d jobs in %d bytes", pages, len(page.Jobs), len(body))
				}
				for _, j := range page.Jobs {
					got = append(got, j.ID)
				}
				if token = page.NextPageToken; token == "" {
					break
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("paged through %v, want %v", got, want)
			}
		})
	}
}

// A gRPC create carrying fields this release does not know (a client built
// on a newer proto) is replayed by the same create without them, over gRPC
// and over REST, which drops unknown JSON fields: the server ignored them.
func TestAGRPCCreateWithUnknownFieldsReplaysOverBothTransports(t *testing.T) {
	env := startServer(t, withService(t, api.Config{}))
	client, _, as := grpcClient(t, env)
	body := strings.Replace(limitsCreateBody, `"sourceUrls"`, `"idempotencyKey":"unknown-1","sourceUrls"`, 1)
	var req docjobsv1.CreateJobRequest
	if err := protojson.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	withUnknown := func() *docjobsv1.CreateJobRequest {
		r := proto.CloneOf(&req)
		b := protowire.AppendTag(nil, 99, protowire.VarintType)
		r.ProtoReflect().SetUnknown(protowire.AppendVarint(b, 7))
		nb := protowire.AppendTag(nil, 98, protowire.BytesType)
		r.GetNeural().ProtoReflect().SetUnknown(protowire.AppendString(nb, "future"))
		return r
	}
	first, err := client.CreateJob(as(context.Background(), keyAlice), withUnknown())
	if err != nil {
		t.Fatal(err)
	}
	again, err := client.CreateJob(as(context.Background(), keyAlice), proto.CloneOf(&req))
	if err != nil {
		t.Fatalf("gRPC replay without the unknown fields: %v", err)
	}
	if again.GetId() != first.GetId() {
		t.Fatalf("gRPC replay made job %s, want %s", again.GetId(), first.GetId())
	}
	resp := env.doJSON("POST", "/v1/jobs", keyAlice, body)
	got := readBody(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, first.GetId()) {
		t.Fatalf("REST replay: %d %s, want job %s", resp.StatusCode, got, first.GetId())
	}
}
