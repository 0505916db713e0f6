package consensus

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestDocumentedExamples votes the worked examples of docs/consensus.md and
// checks the content and consensus block printed there, so the page cannot
// drift from the vote.
func TestDocumentedExamples(t *testing.T) {
	tests := []struct {
		name    string
		runs    []string
		content string
		block   string
	}{
		{
			name: "a scalar dispute",
			runs: []string{
				`{"invoice":"INV-7","total":118.00,"currency":"EUR"}`,
				`{"invoice":"INV-7","total":118,"currency":"EUR"}`,
				`{"invoice":"INV-7","total":181.00,"currency":"EUR"}`,
			},
			content: `{"invoice":"INV-7","total":118.00,"currency":"EUR"}`,
			block: `{"k":3,"runsVotable":3,"minAgreement":0.6666666666666666,"incomplete":false,
 "disagreements":[{"fieldPath":"total","variants":[
   {"value":"118.00","runs":2,"included":true},
   {"value":"181.00","runs":1,"included":false}],"variantsDropped":0}],
 "disagreementsDropped":0}`,
		},
		{
			name: "a dropped record",
			runs: []string{
				`{"items":[{"sku":"A","qty":1},{"sku":"B","qty":2},{"sku":"C","qty":5}]}`,
				`{"items":[{"sku":"A","qty":1},{"sku":"C","qty":5}]}`,
				`{"items":[{"sku":"B","qty":2},{"sku":"A","qty":1},{"sku":"C","qty":6}]}`,
			},
			content: `{"items":[{"sku":"A","qty":1},{"sku":"B","qty":2},{"sku":"C","qty":5}]}`,
			block: `{"k":3,"runsVotable":3,"minAgreement":0.6666666666666666,"incomplete":false,
 "disagreements":[
   {"fieldPath":"items","variants":[
     {"value":"{\"sku\":\"B\",\"qty\":2}","runs":2,"included":true}],"variantsDropped":0},
   {"fieldPath":"items.2.qty","variants":[
     {"value":"5","runs":2,"included":true},
     {"value":"6","runs":1,"included":false}],"variantsDropped":0}],
 "disagreementsDropped":0}`,
		},
		{
			name: "a table of tuples",
			runs: []string{
				`{"rows":[["A",1,"x"],["B",2,"y"]]}`,
				`{"rows":[["A",2,"x"],["B",2,"y"]]}`,
				`{"rows":[["A",3,"x"],["B",2,"y"]]}`,
			},
			content: `{"rows":[["A",1,"x"],["B",2,"y"]]}`,
			block: `{"k":3,"runsVotable":3,"minAgreement":0.3333333333333333,"incomplete":false,
 "disagreements":[
   {"fieldPath":"rows.0.1","variants":[
     {"value":"1","runs":1,"included":true},
     {"value":"2","runs":1,"included":false},
     {"value":"3","runs":1,"included":false}],"variantsDropped":0}],
 "disagreementsDropped":0}`,
		},
		{
			name: "a presence dispute",
			runs: []string{
				`{"seller":{"name":"ACME","vat":"DE1"},"note":"paid"}`,
				`{"seller":{"name":"ACME","vat":"DE1"}}`,
				`{"seller":{"name":"ACME"},"note":null}`,
			},
			content: `{"seller":{"name":"ACME","vat":"DE1"},"note":null}`,
			block: `{"k":3,"runsVotable":3,"minAgreement":0.6666666666666666,"incomplete":false,
 "disagreements":[
   {"fieldPath":"seller.vat","variants":[
     {"value":"\"DE1\"","runs":2,"included":true},
     {"value":"null","runs":1,"included":false}],"variantsDropped":0},
   {"fieldPath":"note","variants":[
     {"value":"null","runs":2,"included":true},
     {"value":"\"paid\"","runs":1,"included":false}],"variantsDropped":0}],
 "disagreementsDropped":0}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustVote(t, answers(tt.runs...), Limits{})
			if string(res.Agreed) != tt.content {
				t.Errorf("content = %s, want %s", res.Agreed, tt.content)
			}
			got, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(tt.block)); err != nil {
				t.Fatalf("the documented block: %v", err)
			}
			if string(got) != want.String() {
				t.Errorf("consensus block\n got %s\nwant %s", got, want.String())
			}
		})
	}
}
