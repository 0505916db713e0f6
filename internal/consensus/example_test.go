package consensus_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docjobs/docjobs/internal/consensus"
)

func ExampleVote() {
	res, err := consensus.Vote([]consensus.Run{
		{Answer: `{"invoice":"A-1","total":10,"items":[{"sku":"x","qty":1},{"sku":"y","qty":2}]}`},
		{Answer: `{"invoice":"A-1","total":10,"items":[{"sku":"y","qty":2}]}`},
		{Answer: `{"invoice":"A-1","total":12,"items":[{"sku":"x","qty":1},{"sku":"y","qty":3}]}`},
	}, consensus.Limits{})
	if err != nil {
		panic(err)
	}
	block, _ := json.MarshalIndent(res, "", "  ")
	fmt.Printf("content: %s\nconsensus: %s\n", res.Agreed, block)
	// Output:
	// content: {"invoice":"A-1","total":10,"items":[{"sku":"x","qty":1},{"sku":"y","qty":2}]}
	// consensus: {
	//   "k": 3,
	//   "runsVotable": 3,
	//   "minAgreement": 0.6666666666666666,
	//   "incomplete": false,
	//   "disagreements": [
	//     {
	//       "fieldPath": "total",
	//       "variants": [
	//         {
	//           "value": "10",
	//           "runs": 2,
	//           "included": true
	//         },
	//         {
	//           "value": "12",
	//           "runs": 1,
	//           "included": false
	//         }
	//       ],
	//       "variantsDropped": 0
	//     },
	//     {
	//       "fieldPath": "items",
	//       "variants": [
	//         {
	//           "value": "{\"sku\":\"x\",\"qty\":1}",
	//           "runs": 2,
	//           "included": true
	//         }
	//       ],
	//       "variantsDropped": 0
	//     },
	//     {
	//       "fieldPath": "items.1.qty",
	//       "variants": [
	//         {
	//           "value": "2",
	//           "runs": 2,
	//           "included": true
	//         },
	//         {
	//           "value": "3",
	//           "runs": 1,
	//           "included": false
	//         }
	//       ],
	//       "variantsDropped": 0
	//     }
	//   ],
	//   "disagreementsDropped": 0
	// }
}

func ExampleNoVotableRunsError() {
	_, err := consensus.Vote([]consensus.Run{
		{Answer: `{"total":`},
		{Answer: `{"total":10}`, Unusable: "truncated"},
	}, consensus.Limits{})
	var none *consensus.NoVotableRunsError
	if errors.As(err, &none) {
		fmt.Println(err) // the row fails with this text
	}
	// Output:
	// consensus: no votable run: run 1: invalid JSON (unexpected end of JSON input at offset 9); run 2: truncated
}
