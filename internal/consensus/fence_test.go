package consensus

import (
	"strings"
	"testing"
)

// A run's answer wrapped in one code fence (```json … ```) votes by its
// inside: merge and the row's verdict read it so (internal/fence), and a
// vote that refused it failed the row after k paid calls.
func TestVoteReadsAFencedAnswerInside(t *testing.T) {
	const fenced = "```json\n{\"a\":1,\"b\":\"x\"}\n```"
	tests := []struct {
		name         string
		runs         []Run
		agreed       string
		votable      int
		minAgreement float64
		unvotable    string // prefix of the one unvotable run's reason
	}{
		{"fenced answers vote as their inside", answers(fenced, fenced, fenced), `{"a":1,"b":"x"}`, 3, 1, ""},
		{"a fenced and a bare answer agree", answers(fenced, `{"b":"x","a":1}`, "\n```\n{\"a\":1,\"b\":\"x\"}\n```\n"), `{"a":1,"b":"x"}`, 3, 1, ""},
		{"a fenced answer that is not JSON inside cannot vote", answers(fenced, "```json\n{\"a\":\n```", `{"a":1,"b":"x"}`), `{"a":1,"b":"x"}`, 2, 1, "invalid JSON ("},
		{"text around a fence is not JSON", answers(fenced, "Here:\n"+fenced, fenced), `{"a":1,"b":"x"}`, 2, 1, "invalid JSON ("},
		{"the one votable fenced answer is the content, compacted", answers(fenced, `oops`, `{"a":`), `{"a":1,"b":"x"}`, 1, 0, "invalid JSON ("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustVote(t, tt.runs, Limits{})
			if string(res.Agreed) != tt.agreed || res.RunsVotable != tt.votable || res.MinAgreement != tt.minAgreement {
				t.Errorf("agreed %s, runsVotable %d, minAgreement %v; want %s, %d, %v",
					res.Agreed, res.RunsVotable, res.MinAgreement, tt.agreed, tt.votable, tt.minAgreement)
			}
			if tt.unvotable == "" && len(res.Unvotable) != 0 {
				t.Errorf("unvotable %+v, want none", res.Unvotable)
			}
			if tt.unvotable != "" && (len(res.Unvotable) == 0 || !strings.HasPrefix(res.Unvotable[0].Reason, tt.unvotable)) {
				t.Errorf("unvotable %+v, want a reason starting %q", res.Unvotable, tt.unvotable)
			}
		})
	}
}
