package e2e

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// votingVendor speaks OpenAI chat completions and answers each document by
// the count of calls it has seen for it: DIFFER gets a different total on its
// third call, INVALID1 invalid JSON on its first, INVALID2 on its first two,
// INVALID3 on all three.
type votingVendor struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newVotingVendor(t *testing.T) *votingVendor {
	t.Helper()
	v := &votingVendor{calls: map[string]int{}}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &req)
		user := messageText(req, "user")
		doc := ""
		for _, d := range []string{"DIFFER", "INVALID1", "INVALID2", "INVALID3"} {
			if strings.Contains(user, d) {
				doc = d
			}
		}
		v.mu.Lock()
		v.calls[doc]++
		n := v.calls[doc]
		v.mu.Unlock()
		answer := `{"invoice":"A-1","total":100,"lines":[{"sku":"x","qty":1}]}`
		switch {
		case doc == "DIFFER" && n == 3:
			answer = `{"invoice":"A-1","total":999,"lines":[{"sku":"x","qty":1}]}`
		case doc == "INVALID1" && n == 1, doc == "INVALID2" && n <= 2, doc == "INVALID3":
			answer = `{"invoice": "A-1", "total": 1` // cut short, but the vendor says stop
		}
		writeChat(w, answer, "stop", 100)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func TestConsensusVotesThreeRunsAndReportsTheDisagreement(t *testing.T) {
	t.Parallel()
	vendor := newVotingVendor(t)
	src := sources(t, map[string]string{
		"differ.txt":   "DIFFER invoice A-1, total 100",
		"invalid1.txt": "INVALID1 invoice A-1, total 100",
		"invalid2.txt": "INVALID2 invoice A-1, total 100",
		"invalid3.txt": "INVALID3 invoice A-1, total 100",
	})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")
	body := promptJob([]string{src + "/differ.txt", src + "/invalid1.txt", src + "/invalid2.txt", src + "/missing.txt", src + "/invalid3.txt"}, "Extract the invoice.")
	body["responseSchema"] = `{"type":"object","required":["invoice","total"],"properties":{"invoice":{"type":"string"},"total":{"type":"number"},"lines":{"type":"array"}}}`
	body["consensus"] = map[string]any{"mode": "CONSENSUS_MODE_THREE_RUNS"}
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
	j := s.waitTerminal(id, keyA, 2*time.Minute)
	if j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v: %v", j["status"], j["error"])
	}
	if mode := j["consensus"].(map[string]any)["mode"]; mode != "CONSENSUS_MODE_THREE_RUNS" {
		t.Errorf("job.consensus.mode = %v", mode)
	}

	raw := s.do("GET", "/v1/jobs/"+id+"/result", keyA, nil).body
	var res struct {
		Result struct {
			Llm []map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	rows := res.Result.Llm
	if len(rows) != 5 {
		t.Fatalf("%d model rows: %s", len(rows), raw)
	}
	type block struct {
		K, RunsVotable int
		MinAgreement   float64
		Incomplete     bool
		Disagreements  []struct {
			FieldPath string
			Variants  []struct {
				Value    string
				Runs     int
				Included bool
			}
		}
	}
	consensusOf := func(i int) block {
		t.Helper()
		var b block
		if err := json.Unmarshal(rows[i]["consensus"], &b); err != nil {
			t.Fatalf("row %d consensus %s: %v", i, rows[i]["consensus"], err)
		}
		return b
	}

	differ := consensusOf(0)
	if differ.K != 3 || differ.RunsVotable != 3 || math.Abs(differ.MinAgreement-2.0/3) > 0.01 || differ.Incomplete {
		t.Errorf("one run differing on one field: %+v", differ)
	}
	if len(differ.Disagreements) != 1 || differ.Disagreements[0].FieldPath != "total" {
		t.Fatalf("disagreements: %+v", differ.Disagreements)
	}
	v := differ.Disagreements[0].Variants
	if len(v) != 2 || v[0].Value != "100" || v[0].Runs != 2 || !v[0].Included || v[1].Value != "999" || v[1].Runs != 1 || v[1].Included {
		t.Errorf("variants: %+v", v)
	}
	if c := string(rows[0]["content"]); !strings.Contains(c, `\"total\":100`) {
		t.Errorf("agreed content = %s", c)
	}
	if string(rows[0]["schemaValid"]) != "true" {
		t.Errorf("schemaValid of the agreed answer = %s", rows[0]["schemaValid"])
	}

	if b := consensusOf(1); b.RunsVotable != 2 || !b.Incomplete || b.MinAgreement != 1 {
		t.Errorf("one invalid run: %+v", b)
	}
	if b := consensusOf(2); b.RunsVotable != 1 || !b.Incomplete || b.MinAgreement != 0 {
		t.Errorf("two invalid runs: %+v", b)
	}
	if c, ok := rows[3]["consensus"]; !ok || string(c) != "null" {
		t.Errorf("the row of the file that failed recognition: consensus %q (present %v), want null", c, ok)
	}

	var failed struct{ Status, Error string }
	failedRaw, _ := json.Marshal(rows[4])
	_ = json.Unmarshal(failedRaw, &failed)
	if failed.Status != "JOB_LLM_STATUS_FAILED" || !strings.Contains(failed.Error, "run 1: invalid JSON") || !strings.Contains(failed.Error, "run 3: invalid JSON") {
		t.Errorf("no votable run: %s", failedRaw)
	}
	if c := string(rows[4]["consensus"]); c != "null" {
		t.Errorf("the failed row: consensus %s, want null", c)
	}

	vendor.mu.Lock()
	defer vendor.mu.Unlock()
	for _, d := range []string{"DIFFER", "INVALID1", "INVALID2", "INVALID3"} {
		if n := vendor.calls[d]; n != 3 {
			t.Errorf("%s was asked %d times, want 3", d, n)
		}
	}
}
