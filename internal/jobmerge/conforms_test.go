package jobmerge

import (
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/schema"
)

// TestSchemaValidBuildsNoViolations: merged content judged against the
// job's schema gives the same schemaValid as the validator's full run,
// without building a violation each time the content breaks the schema
// (hunt-merge: 4 MB of {"items":[1,1,…]} against string items took
// 646 MiB). Allocations are counted, not bytes: the validator allocates
// about as much garbage for each element either way, but each violation
// it builds is allocations of its own (its path, its kind) that live to
// the end of the run, the peak's cause; judged alone, each fails with an
// empty error.
func TestSchemaValidBuildsNoViolations(t *testing.T) {
	const sch = `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}},"required":["items"]}`
	tests := []struct {
		name    string
		content string
		valid   bool
	}{
		{"a violation per element", `{"items":[` + strings.Repeat("1,", 20000) + `1]}`, false},
		{"conforms", `{"items":[` + strings.Repeat(`"a",`, 20000) + `"a"]}`, true},
		{"a required field missing", `{"other":1}`, false},
		{"not JSON", `{"items":`, false},
		{"fenced", "```json\n{\"items\":[\"a\"]}\n```", true},
	}
	s, err := schema.Compile(sch)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := conforms(sch, tt.content)
			if got == nil || *got != tt.valid {
				t.Fatalf("conforms = %v, want %v", got, tt.valid)
			}
			if full, _ := schema.Verdict(s, tt.content); full != tt.valid {
				t.Fatalf("Verdict = %v, want %v", full, tt.valid)
			}
		})
	}
	content := tests[0].content
	full := testing.AllocsPerRun(2, func() {
		s, _ := schema.Compile(sch)
		doc, _ := decode(content)
		_ = s.Validate(doc)
	})
	judged := testing.AllocsPerRun(2, func() { conforms(sch, content) })
	t.Logf("20,001 violations: compile, decode and Validate made %.0f allocations, conforms %.0f", full, judged)
	if judged > full-10000 { // at least half an allocation fewer per violation
		t.Errorf("conforms made %.0f allocations, compile, decode and Validate %.0f: it builds the violations", judged, full)
	}
}
