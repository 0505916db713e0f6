package api

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// largeRequest is a create at the prompt limits: 16 prompts of 64 KiB, about
// 1 MiB that every listing of the job echoes.
func largeRequest() *docjobsv1.CreateJobRequest {
	r := createRequest()
	for i := range maxPrompts {
		r.Prompts = append(r.Prompts, strings.Repeat(string(rune('a'+i)), maxPromptBytes))
	}
	return r
}

// A list page is bounded in bytes as well as in jobs, so that a gRPC client
// with the default 4 MiB receive limit can page through any account and a
// list call does not cost the server 100 jobs of a MiB each.
func TestListJobsPagesAreBoundedInBytes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		pageSize int32
		bound    int // the most the jobs of a page of more than one may take
	}{
		{"the default bound, the default page size", Config{}, 0, DefaultMaxListPageBytes},
		{"the default bound, four jobs asked", Config{}, 4, DefaultMaxListPageBytes},
		{"the default bound, a hundred jobs asked", Config{}, 100, DefaultMaxListPageBytes},
		{"a bound below one job still lists one", Config{MaxListPageBytes: 1000}, 0, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.cfg)
			var want []string // newest first
			for range 5 {
				want = append([]string{h.create(t, "acme", largeRequest()).GetId()}, want...)
			}
			var got []string
			token := ""
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("listing does not end")
				}
				page, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{PageSize: tt.pageSize, PageToken: token})
				if err != nil {
					t.Fatal(err)
				}
				if n := len(page.GetJobs()); n == 0 || (n > 1 && proto.Size(page) > tt.bound+1024) {
					t.Fatalf("page %d: %d jobs in %d bytes; want at least one, and at most %d bytes past one",
						pages, n, proto.Size(page), tt.bound)
				}
				if proto.Size(page) >= 4<<20 {
					t.Fatalf("page %d: %d bytes, more than a default gRPC client receives", pages, proto.Size(page))
				}
				for _, j := range page.GetJobs() {
					if len(j.GetPrompts()) != maxPrompts {
						t.Fatalf("job %s lists %d prompts, want all %d", j.GetId(), len(j.GetPrompts()), maxPrompts)
					}
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
	}
}

// A page's bound counts each job as the larger of its protobuf and its JSON
// (field names, quotes and escapes included), so that a REST page keeps it
// too: the pages of small jobs under a small bound show the difference.
func TestListJobsPagesAreBoundedInJSONBytesToo(t *testing.T) {
	probe := newHarness(t, Config{})
	one := probe.create(t, "acme", createRequest())
	jsonOne, _ := protojson.Marshal(one)
	bound := len(jsonOne)*5/2 + 10 // two jobs' JSON, not three
	if 3*proto.Size(one)+64 > bound {
		t.Fatalf("a job is %d bytes of protobuf and %d of JSON: the test proves nothing", proto.Size(one), len(jsonOne))
	}
	t.Logf("a job: %d bytes of protobuf, %d of JSON; bound %d", proto.Size(one), len(jsonOne), bound)

	h := newHarness(t, Config{MaxListPageBytes: bound})
	var want []string
	for range 5 {
		want = append([]string{h.create(t, "acme", createRequest()).GetId()}, want...)
	}
	var got []string
	for token, pages := "", 0; ; pages++ {
		if pages > 10 {
			t.Fatal("listing does not end")
		}
		page, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		var jobsJSON int
		for _, j := range page.GetJobs() {
			b, _ := protojson.Marshal(j)
			jobsJSON += len(b) + 1
			got = append(got, j.GetId())
		}
		if n := len(page.GetJobs()); n == 0 || (n > 1 && jobsJSON > bound) {
			t.Fatalf("page %d: %d jobs in %d bytes of JSON (%d of protobuf); want at least one, and at most %d bytes",
				pages, n, jobsJSON, proto.Size(page), bound)
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("paged through %v, want %v", got, want)
	}
}

func TestANegativeListPageBoundIsRefused(t *testing.T) {
	_, err := New(Config{PublicURL: testPublicURL, MaxListPageBytes: -1}, Deps{})
	if err == nil || !strings.Contains(err.Error(), "MaxListPageBytes") {
		t.Fatalf("New = %v, want an error naming MaxListPageBytes", err)
	}
}
