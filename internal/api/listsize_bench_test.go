package api

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// BenchmarkListPageJobSize is what sizing one job of a list page costs:
// its protobuf size, which gRPC answers carry, and its JSON size, which
// REST answers carry and which the page bound also counts.
func BenchmarkListPageJobSize(b *testing.B) {
	large := validRequest()
	large.Prompts = slices.Repeat([]string{strings.Repeat("Extract the total. ", 3400)}, 16) // about 1 MiB
	for _, tt := range []struct {
		name string
		job  *docjobsv1.Job
	}{
		{"a job of one prompt", &docjobsv1.Job{Id: "01a20d28-f8a0-72aa-9816-8eb4ba56d47c", SourceUrls: []string{"https://example.com/a.pdf"},
			Prompts: []string{"Extract the invoice total and date."}, Title: "invoice", Neural: validRequest().GetNeural()}},
		{"a job of 16 prompts of 64 KiB", &docjobsv1.Job{Id: "01a20d28-f8a0-72aa-9816-8eb4ba56d47c", Prompts: large.GetPrompts()}},
	} {
		b.Run(tt.name+"/protobuf", func(b *testing.B) {
			for b.Loop() {
				_ = fieldSize(proto.Size(tt.job))
			}
		})
		b.Run(tt.name+"/protobuf and JSON", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte // reused from job to job, as ListJobs does
			for b.Loop() {
				var n int
				buf, n = jsonSize(buf, tt.job)
				_ = max(fieldSize(proto.Size(tt.job)), n)
			}
		})
	}
}
