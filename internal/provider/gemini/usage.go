package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"google.golang.org/genai"

	"github.com/docjobs/docjobs/internal/provider"
)

// usage reads the tokens of an answer; 0 when it has no usage metadata.
// Thinking tokens are billed as output.
func usage(u *genai.GenerateContentResponseUsageMetadata) (input, output int64) {
	if u == nil {
		return 0, 0
	}
	output = provider.AddTokens(provider.Tokens(int64(u.CandidatesTokenCount)), provider.Tokens(int64(u.ThoughtsTokenCount)))
	return provider.Tokens(int64(u.PromptTokenCount)), min(output, provider.MaxTokenCount)
}

// lenientUsage hands the SDK an answer whose usage report it can read. The
// SDK decodes the counts of usageMetadata into int32 and fails the whole
// answer on one that does not fit (a gateway's or proxy's number), and
// that answer was billed. Such a report is replaced, before the SDK reads
// it, by the counts usage reads, each read as provider.TokenCount reads
// one; any other answer goes on untouched. The recorded exchange, under
// this transport, keeps the vendor's own body.
type lenientUsage struct {
	next http.RoundTripper
}

// withLenientUsage returns a copy of c whose transport is lenientUsage.
func withLenientUsage(c *http.Client) *http.Client {
	cp := *c
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = lenientUsage{next: next}
	return &cp
}

func (t lenientUsage) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	body, readErr := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rest io.Reader = bytes.NewReader(readableUsage(body))
	if readErr != nil {
		// The SDK meets the read's failure (a cut-off body, one past the
		// answer limit) where it would have without this transport.
		rest = io.MultiReader(bytes.NewReader(body), failingReader{readErr})
	}
	resp.Body = io.NopCloser(rest)
	resp.ContentLength = -1
	return resp, nil
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

// readableUsage returns body, or body with its usageMetadata rewritten
// when the SDK could not decode it.
func readableUsage(body []byte) []byte {
	var top struct {
		Usage json.RawMessage `json:"usageMetadata"`
	}
	if json.Unmarshal(body, &top) != nil || len(top.Usage) == 0 {
		return body // not JSON: the SDK's to fail as it does
	}
	var sdk genai.GenerateContentResponseUsageMetadata
	if json.Unmarshal(top.Usage, &sdk) == nil {
		return body
	}
	var counts struct {
		Prompt     provider.TokenCount `json:"promptTokenCount"`
		Candidates provider.TokenCount `json:"candidatesTokenCount"`
		Thoughts   provider.TokenCount `json:"thoughtsTokenCount"`
	}
	_ = json.Unmarshal(top.Usage, &counts) // not an object: no counts
	var all map[string]json.RawMessage
	if json.Unmarshal(body, &all) != nil {
		return body
	}
	// TokenCount's bound is int32's, so these decode.
	fixed, err := json.Marshal(map[string]int64{"promptTokenCount": int64(counts.Prompt),
		"candidatesTokenCount": int64(counts.Candidates), "thoughtsTokenCount": int64(counts.Thoughts)})
	if err != nil {
		return body
	}
	all["usageMetadata"] = fixed
	out, err := json.Marshal(all)
	if err != nil {
		return body
	}
	return out
}
