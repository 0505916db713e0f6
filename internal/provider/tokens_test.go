package provider_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

func TestTokenCountsAreClampedToWhatACallCanBill(t *testing.T) {
	const top = provider.MaxTokenCount
	tests := []struct {
		name string
		json string
		want int64
	}{
		{"a count is kept", `11`, 11},
		{"zero is zero", `0`, 0},
		{"a negative count is none", `-5`, 0},
		{"the largest int64 is the maximum", `9223372036854775807`, top},
		{"past int64 is the maximum, not a wrapped negative", `1180591620717411303424`, top},
		{"past int64 below zero is none", `-99999999999999999999`, 0},
		{"a float past any int is the maximum", `1e300`, top},
		{"a float past float64 is the maximum", `1e400`, top},
		{"a fraction is cut to whole tokens", `7.9`, 7},
		{"a whole float is its count", `4.0`, 4},
		{"a count in a string is read", `"12"`, 12},
		{"a negative count in a string is none", `"-12"`, 0},
		{"words are no count", `"many"`, 0},
		{"null is no count", `null`, 0},
		{"an object is no count", `{"n":1}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct {
				N provider.TokenCount `json:"n"`
			}
			if err := json.Unmarshal([]byte(`{"n":`+tt.json+`}`), &v); err != nil {
				t.Fatalf("decode: %v; a count must never fail its answer", err)
			}
			if int64(v.N) != tt.want {
				t.Errorf("read %s as %d, want %d", tt.json, v.N, tt.want)
			}
		})
	}
}

func TestTokenHelpersSaturate(t *testing.T) {
	tests := []struct {
		name      string
		got, want int64
	}{
		{"Tokens keeps a count", provider.Tokens(42), 42},
		{"Tokens makes a negative count none", provider.Tokens(-1), 0},
		{"Tokens caps a huge count", provider.Tokens(math.MaxInt64), provider.MaxTokenCount},
		{"TokensOfFloat caps what int64 cannot hold", provider.TokensOfFloat(1e300), provider.MaxTokenCount},
		{"TokensOfFloat makes NaN none", provider.TokensOfFloat(math.NaN()), 0},
		{"AddTokens adds", provider.AddTokens(3, 4), 7},
		{"AddTokens does not wrap around", provider.AddTokens(math.MaxInt64, 10), math.MaxInt64},
		{"AddTokens counts a negative as none", provider.AddTokens(math.MinInt64, 5), 5},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}
