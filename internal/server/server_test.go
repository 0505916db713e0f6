package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/docjobs/docjobs/gen/openapi"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
)

const validCreate = `{"sourceUrls":["https://example.test/a.txt"],"title":"t",
	"neural":{"type":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"m"},
	"ocr":{"provider":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"m","providerKey":"secret-ocr-key"}}`

func TestOperationalRoutes(t *testing.T) {
	env := startServer(t)

	t.Run("healthz answers ok while the process lives", func(t *testing.T) {
		resp := env.do("GET", "/healthz", "", "", nil)
		if body := readBody(t, resp); resp.StatusCode != 200 || body != "ok\n" {
			t.Errorf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("readyz follows the readiness check", func(t *testing.T) {
		resp := env.do("GET", "/readyz", "", "", nil)
		if resp.StatusCode != 200 {
			t.Errorf("ready: status %d", resp.StatusCode)
		}
		env.setReady(errors.New("ping postgres://db.internal:5432: connection refused"))
		defer env.setReady(nil)
		resp = env.do("GET", "/readyz", "", "", nil)
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("not ready: status %d", resp.StatusCode)
		}
		if strings.Contains(body, "db.internal") {
			t.Errorf("readyz leaks the cause: %q", body)
		}
	})
	t.Run("openapi.yaml serves the embedded description", func(t *testing.T) {
		resp := env.do("GET", "/openapi.yaml", "", "", nil)
		body := readBody(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" {
			t.Errorf("got %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if body != string(openapi.YAML) || !strings.Contains(body, "openapi: 3.0.3") {
			t.Errorf("body is not the embedded OpenAPI 3.0.3 document")
		}
	})
	t.Run("metrics serve Go runtime and request metrics", func(t *testing.T) {
		resp := env.do("GET", "/metrics", "", "", nil)
		body := readBody(t, resp)
		for _, want := range []string{"go_goroutines", "process_cpu_seconds_total", `docjobs_http_requests_total{code="200",method="GET",route="/healthz"}`} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
	t.Run("an unknown path is a JSON 404", func(t *testing.T) {
		wantStatusBody(t, env.do("GET", "/nope", "", "", nil), 404, codes.NotFound, true)
	})
	t.Run("an unknown path under /v1 is a JSON 404", func(t *testing.T) {
		wantStatusBody(t, env.do("GET", "/v1/nope/x/y", keyAlice, "", nil), 404, codes.NotFound, true)
	})
	t.Run("a known path with the wrong method is a JSON 405", func(t *testing.T) {
		wantStatusBody(t, env.do("PUT", "/v1/jobs", keyAlice, "", nil), 405, codes.Unimplemented, true)
	})
}

func TestWrongMethodOnAKnownPathIs405WithAllow(t *testing.T) {
	env := startServer(t)
	tests := []struct {
		name, method, path string
		wantAllow          string
		upload             bool // the upload error shape: no details
	}{
		{"GET on the upload path is not a job id", "GET", "/v1/jobs/upload", "POST", true},
		{"PUT on the upload path answers in the upload shape", "PUT", "/v1/jobs/upload", "POST", true},
		{"DELETE on the upload path", "DELETE", "/v1/jobs/upload", "POST", true},
		{"GET on cancel is not a job id", "GET", "/v1/jobs/abc:cancel", "POST", false},
		{"DELETE on cancel", "DELETE", "/v1/jobs/abc:cancel", "POST", false},
		{"PUT on the job collection", "PUT", "/v1/jobs", "GET, POST", false},
		{"DELETE on the job collection", "DELETE", "/v1/jobs", "GET, POST", false},
		{"OPTIONS on the job collection", "OPTIONS", "/v1/jobs", "GET, POST", false},
		{"PATCH on a job", "PATCH", "/v1/jobs/abc", "GET, DELETE", false},
		{"POST on a result", "POST", "/v1/jobs/abc/result", "GET", false},
		{"POST on events", "POST", "/v1/jobs/abc/events", "GET, HEAD", false},
		{"PUT on a file", "PUT", "/v1/files/abc", "GET, HEAD, DELETE", false},
		{"POST on healthz", "POST", "/healthz", "GET, HEAD", false},
		{"POST on readyz", "POST", "/readyz", "GET, HEAD", false},
		{"POST on metrics", "POST", "/metrics", "GET, HEAD", false},
		{"PUT on openapi.yaml", "PUT", "/openapi.yaml", "GET, HEAD", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.do(tt.method, tt.path, keyAlice, "", nil)
			if got := resp.Header.Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
			m := wantStatusBody(t, resp, http.StatusMethodNotAllowed, codes.Unimplemented, !tt.upload)
			if want := "method " + tt.method + " is not allowed on " + tt.path; m["message"] != want {
				t.Errorf("message = %q, want %q", m["message"], want)
			}
		})
	}
	t.Run("HEAD where it is not served is 405 with Allow", func(t *testing.T) {
		for path, allow := range map[string]string{"/v1/jobs/abc": "GET, DELETE", "/v1/jobs/upload": "POST", "/v1/jobs": "GET, POST"} {
			resp := env.do("HEAD", path, keyAlice, "", nil)
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != allow {
				t.Errorf("HEAD %s: %d Allow %q, want 405 %q", path, resp.StatusCode, resp.Header.Get("Allow"), allow)
			}
		}
	})
	t.Run("HEAD still works where it worked", func(t *testing.T) {
		// (events answer 501 on a server without a progress source)
		for path, want := range map[string]int{"/healthz": 200, "/openapi.yaml": 200, "/v1/files/missing": 404, "/v1/jobs/missing/events": 501} {
			if resp := env.do("HEAD", path, keyAlice, "", nil); resp.StatusCode != want {
				t.Errorf("HEAD %s: %d, want %d", path, resp.StatusCode, want)
			}
		}
	})
	t.Run("the right method still reaches its handler", func(t *testing.T) {
		wantStatusBody(t, env.do("POST", "/v1/jobs/abc:cancel", keyAlice, "", nil), 409, codes.FailedPrecondition, true)
		wantStatusBody(t, env.do("POST", "/v1/jobs/upload", keyAlice, "text/plain", strings.NewReader("x")), 400, codes.InvalidArgument, false)
		wantStatusBody(t, env.do("GET", "/v1/jobs/abc", keyAlice, "", nil), 404, codes.NotFound, true)
	})
	t.Run("unknown paths stay 404", func(t *testing.T) {
		for _, path := range []string{"/v1/jobs/abc/nope", "/v1/jobs/abc/result/x", "/nope", "/v1/files/a/b", "/healthz/x"} {
			resp := env.do("POST", path, keyAlice, "", nil)
			if resp.Header.Get("Allow") != "" {
				t.Errorf("POST %s has Allow %q", path, resp.Header.Get("Allow"))
			}
			wantStatusBody(t, resp, 404, codes.NotFound, true)
		}
	})
	t.Run("a 405 is counted under its route pattern", func(t *testing.T) {
		body := readBody(t, env.do("GET", "/metrics", "", "", nil))
		want := `docjobs_http_requests_total{code="405",method="GET",route="/v1/jobs/{id}:cancel"} 1`
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	})
}

func TestNonCanonicalPathsAreTheJSON404OfUnknownPaths(t *testing.T) {
	env := startServer(t)
	paths := []struct{ name, path string }{
		{"the job collection with a trailing slash", "/v1/jobs/"},
		{"the file collection with a trailing slash", "/v1/files/"},
		{"a job with a trailing slash", "/v1/jobs/abc/"},
		{"the upload path with a trailing slash", "/v1/jobs/upload/"},
		{"a leading double slash", "//v1/jobs"},
		{"a double slash after v1", "/v1//jobs"},
		{"a double slash that would retarget at job \"result\"", "/v1/jobs//result"},
		{"the API root without its slash", "/v1"},
		{"the API root", "/v1/"},
		{"a dot segment", "/v1/jobs/./abc"},
		{"a dot-dot segment", "/v1/jobs/../files/abc"},
		{"an operational route with a trailing slash", "/healthz/"},
	}
	for _, p := range paths {
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
			t.Run(p.name+"/"+method, func(t *testing.T) {
				resp := env.do(method, p.path, keyAlice, "application/json", strings.NewReader("{}"))
				if loc := resp.Header.Get("Location"); loc != "" {
					t.Errorf("Location = %q: redirected", loc)
				}
				if allow := resp.Header.Get("Allow"); allow != "" {
					t.Errorf("Allow = %q on an unknown path", allow)
				}
				if method == "HEAD" {
					if resp.StatusCode != http.StatusNotFound {
						t.Errorf("status = %d, want 404", resp.StatusCode)
					}
					return
				}
				m := wantStatusBody(t, resp, http.StatusNotFound, codes.NotFound, true)
				if want := "no route for " + method + " " + p.path; m["message"] != want {
					t.Errorf("message = %q, want %q", m["message"], want)
				}
			})
		}
	}
	t.Run("canonical paths still reach their routes", func(t *testing.T) {
		if resp := env.do("GET", "/healthz", "", "", nil); resp.StatusCode != 200 {
			t.Errorf("GET /healthz: %d", resp.StatusCode)
		}
		if m := wantStatusBody(t, env.do("GET", "/v1/jobs/abc", keyAlice, "", nil), 404, codes.NotFound, true); strings.HasPrefix(fmt.Sprint(m["message"]), "no route") {
			t.Errorf("GET /v1/jobs/abc: message %q, want the service's answer", m["message"])
		}
		if resp := env.do("GET", "/v1/jobs", keyAlice, "", nil); resp.StatusCode != 200 {
			t.Errorf("GET /v1/jobs: %d", resp.StatusCode)
		}
	})
}

func TestMethodTableMatchesTheMostSpecificTemplate(t *testing.T) {
	var table methodTable
	for _, r := range []struct{ method, template string }{
		{"GET", "/v1/jobs/{id}"}, {"DELETE", "/v1/jobs/{id}"}, {"POST", "/v1/jobs/{id=*}:cancel"},
		{"POST", "/v1/jobs/upload"}, {"GET", "/v1/jobs"}, {"POST", "/v1/jobs"},
	} {
		if err := table.add(r.method, r.template, nil); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path, want string // want is the Allow header, "" for no match
	}{
		{"a literal beats a variable", "/v1/jobs/upload", "POST"},
		{"a verb beats a bare variable", "/v1/jobs/abc:cancel", "POST"},
		{"a bare variable takes any other segment", "/v1/jobs/abc:other", "GET, DELETE"},
		{"a verb alone is not an id", "/v1/jobs/:cancel", "GET, DELETE"},
		{"an empty segment matches no variable", "/v1/jobs/", ""},
		{"a longer path matches nothing", "/v1/jobs/abc/def", ""},
		{"the collection", "/v1/jobs", "GET, POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if p := table.match(tt.path); p != nil {
				got = p.allow()
			}
			if got != tt.want {
				t.Errorf("match(%q) allows %q, want %q", tt.path, got, tt.want)
			}
		})
	}
	for _, bad := range []string{"v1/jobs", "/v1/{name=files/*}", "/v1/{id}x", "/v1//x"} {
		if err := table.add("GET", bad, nil); err == nil {
			t.Errorf("add(%q) accepted an unsupported template", bad)
		}
	}
}

func TestAuthentication(t *testing.T) {
	env := startServer(t)
	tests := []struct {
		name, method, path, key string
		withDetails             bool
	}{
		{"REST without a key", "GET", "/v1/jobs", "", true},
		{"REST with an unknown key", "GET", "/v1/jobs", "dj_unknown", true},
		{"REST create without a key", "POST", "/v1/jobs", "", true},
		{"download without a key", "GET", "/v1/files/file-1", "", true},
		{"upload without a key has no details", "POST", "/v1/jobs/upload", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is 401", func(t *testing.T) {
			resp := env.doJSON(tt.method, tt.path, tt.key, "")
			wantStatusBody(t, resp, 401, codes.Unauthenticated, tt.withDetails)
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("a valid key reaches the service as the account", func(t *testing.T) {
		resp := env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)
		body := readBody(t, resp)
		if resp.StatusCode != 200 || decodeObject(t, body)["accountId"] != "alice" {
			t.Errorf("got %d %s", resp.StatusCode, body)
		}
	})
}

func TestRESTResponsesAreCamelCaseWithoutZeroValues(t *testing.T) {
	env := startServer(t)
	resp := env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)
	body := readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	m := decodeObject(t, body)
	for _, k := range []string{"id", "accountId", "sourceUrls", "status", "consensus"} {
		if _, ok := m[k]; !ok {
			t.Errorf("response lacks %s: %s", k, body)
		}
	}
	for _, k := range []string{"account_id", "error", "prompts", "responseSchema"} {
		if _, ok := m[k]; ok {
			t.Errorf("response has %s: %s", k, body)
		}
	}
	if got := m["consensus"].(map[string]any)["mode"]; got != "CONSENSUS_MODE_UNSPECIFIED" {
		t.Errorf("consensus.mode = %v (optional enums with presence are emitted)", got)
	}
	t.Run("empty query parameters are no filter", func(t *testing.T) {
		resp := env.doJSON("GET", "/v1/jobs?statusEq=&pageSize=", keyAlice, "")
		body := readBody(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get(WarningHeader) != "" {
			t.Fatalf("got %d %q %s", resp.StatusCode, resp.Header.Get(WarningHeader), body)
		}
		if jobs, _ := decodeObject(t, body)["jobs"].([]any); len(jobs) != 1 {
			t.Errorf("jobs = %v, want alice's one job", jobs)
		}
	})
	t.Run("an empty list still has its jobs array", func(t *testing.T) {
		resp := env.doJSON("GET", "/v1/jobs", keyBob, "")
		if body := strings.TrimSpace(readBody(t, resp)); resp.StatusCode != 200 || body != `{"jobs":[]}` {
			t.Errorf("got %d %s, want 200 {\"jobs\":[]}", resp.StatusCode, body)
		}
	})
}

func TestErrorMapping(t *testing.T) {
	env := startServer(t)
	created := decodeObject(t, readBody(t, env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)))
	aliceJob := created["id"].(string)

	tests := []struct {
		name           string
		method, path   string
		key, body      string
		wantHTTP       int
		wantCode       codes.Code
		wantMessage    string // a substring; "" skips
		notWantMessage string
	}{
		{"a service InvalidArgument is 400 with its message", "POST", "/v1/jobs", keyAlice, `{"title":"x"}`,
			400, codes.InvalidArgument, "sourceUrls: required", ""},
		{"another account's job is 404", "GET", "/v1/jobs/" + aliceJob, keyBob, "",
			404, codes.NotFound, "not found", aliceJob},
		{"a wrapped not-found sentinel is 404 without the wrapping text", "GET", "/v1/jobs/missing", keyAlice, "",
			404, codes.NotFound, "not found", "get job"},
		{"FailedPrecondition (cancel a finished job) is 409", "POST", "/v1/jobs/" + aliceJob + ":cancel", keyAlice, "",
			409, codes.FailedPrecondition, "already terminal", ""},
		{"ResourceExhausted is 429", "GET", "/v1/jobs/busy/result", keyAlice, "",
			429, codes.ResourceExhausted, "too many requests", ""},
		{"a plain Go error is Internal with an id and no cause", "GET", "/v1/jobs/boom/result", keyAlice, "",
			500, codes.Internal, "internal error (id=", "sqlite"},
		{"a panic is Internal with an id", "GET", "/v1/jobs/panic/result", keyAlice, "",
			500, codes.Internal, "internal error (id=", "exploded"},
		{"malformed JSON is 400 naming where", "POST", "/v1/jobs", keyAlice, `{"sourceUrls":["a"],}`,
			400, codes.InvalidArgument, "invalid JSON at offset", ""},
		{"truncated JSON is 400", "POST", "/v1/jobs", keyAlice, `{"sourceUrls":["a"]`,
			400, codes.InvalidArgument, "unexpected end of body", ""},
		{"a JSON array body is 400", "POST", "/v1/jobs", keyAlice, `[]`,
			400, codes.InvalidArgument, "must be a JSON object", ""},
		{"a wrong JSON type is 400 naming the field", "POST", "/v1/jobs", keyAlice, `{"sourceUrls":"https://a.test/x"}`,
			400, codes.InvalidArgument, "sourceUrls: expected an array, got a string", ""},
		{"an out-of-range integer is 400 naming the field", "POST", "/v1/jobs", keyAlice, `{"neural":{"chunkBudgetTokens":99999999999}}`,
			400, codes.InvalidArgument, "neural.chunkBudgetTokens: out of range", "int32"},
		{"a word for an integer is 400 naming the field", "POST", "/v1/jobs", keyAlice, `{"neural":{"chunkBudgetTokens":"abc"}}`,
			400, codes.InvalidArgument, "neural.chunkBudgetTokens: expected an integer, got a string", "int32"},
		{"null in a list is 400 naming the element", "POST", "/v1/jobs", keyAlice, `{"sourceUrls":["https://a.test/x"],"prompts":[null]}`,
			400, codes.InvalidArgument, "prompts[0]: expected a string, got null", "string field"},
		{"a non-numeric page size is 400 naming the parameter", "GET", "/v1/jobs?pageSize=ten", keyAlice, "",
			400, codes.InvalidArgument, "pageSize: expected an integer", "int32"},
		{"an unknown status filter is 400", "GET", "/v1/jobs?statusEq=JOB_STATUS_DONE", keyAlice, "",
			400, codes.InvalidArgument, `unknown value "JOB_STATUS_DONE"`, ""},
		// audit-readme F3: dropped, this said "required" though a value was given.
		{"a provider without its prefix is 400 naming it, not 'required'", "POST", "/v1/jobs", keyAlice,
			`{"sourceUrls":["https://a.test/x"],"ocr":{"provider":"PROVIDER_1","model":"m","providerKey":"k"}}`, 400, codes.InvalidArgument,
			`ocr.provider: unknown value "PROVIDER_1" (did you mean NEURAL_CLIENT_TYPE_PROVIDER_1?)`, "required"},
		// audit-api3 F5: the same for neural.type once prompts make it required.
		{"a neural type without its prefix, with prompts, is 400 naming it, not 'required'", "POST", "/v1/jobs", keyAlice,
			`{"sourceUrls":["https://a.test/x"],"prompts":["p"],"neural":{"type":"PROVIDER_2","model":"m","apiKey":"k"}}`, 400, codes.InvalidArgument,
			`neural.type: unknown value "PROVIDER_2" (did you mean NEURAL_CLIENT_TYPE_PROVIDER_2?)`, "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.doJSON(tt.method, tt.path, tt.key, tt.body)
			m := wantStatusBody(t, resp, tt.wantHTTP, tt.wantCode, true)
			msg := m["message"].(string)
			if !strings.Contains(msg, tt.wantMessage) {
				t.Errorf("message %q lacks %q", msg, tt.wantMessage)
			}
			if tt.notWantMessage != "" && strings.Contains(msg, tt.notWantMessage) {
				t.Errorf("message %q contains %q", msg, tt.notWantMessage)
			}
		})
	}

	t.Run("the internal error id is logged with its cause", func(t *testing.T) {
		resp := env.doJSON("GET", "/v1/jobs/boom/result", keyAlice, "")
		msg := decodeObject(t, readBody(t, resp))["message"].(string)
		id := regexp.MustCompile(`id=([0-9a-f]+)`).FindStringSubmatch(msg)
		if id == nil {
			t.Fatalf("no id in %q", msg)
		}
		var found bool
		for line := range strings.Lines(env.logs.String()) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || rec["error_id"] != id[1] {
				continue
			}
			found = true
			if !strings.Contains(rec["error"].(string), "disk I/O error") || rec["route"] != "/v1/jobs/{id}/result" || rec["account_id"] != "alice" {
				t.Errorf("log line lacks cause, route or account: %s", line)
			}
		}
		if !found {
			t.Errorf("no log line carries error_id %s", id[1])
		}
	})
	t.Run("Retry-After comes from RetryInfo", func(t *testing.T) {
		resp := env.doJSON("GET", "/v1/jobs/busy/result", keyAlice, "")
		if got := resp.Header.Get("Retry-After"); got != "2" {
			t.Errorf("Retry-After = %q, want 2", got)
		}
		details := decodeObject(t, readBody(t, resp))["details"].([]any)
		if len(details) != 1 || details[0].(map[string]any)["@type"] != "type.googleapis.com/google.rpc.RetryInfo" {
			t.Errorf("details = %v", details)
		}
	})
	t.Run("a JSON body above the limit is 413", func(t *testing.T) {
		big := `{"title":"` + strings.Repeat("x", DefaultMaxJSONBodyBytes) + `"}`
		m := wantStatusBody(t, env.doJSON("POST", "/v1/jobs", keyAlice, big), 413, codes.ResourceExhausted, true)
		if msg := m["message"].(string); !strings.Contains(msg, fmt.Sprint(DefaultMaxJSONBodyBytes)+" bytes") {
			t.Errorf("message = %q", msg)
		}
	})
}

func TestRESTAcceptsACreateRequestWithEveryFieldAtItsCap(t *testing.T) {
	env := startServer(t)
	n := func(count int, f func(i int) string) []string {
		out := make([]string, count)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	pad := func(prefix string, size int) string { return prefix + strings.Repeat("x", size-len(prefix)) }
	// The caps of docs/decisions.md ("Extra bounds on hostile input") and
	// the spec's (responseSchema 128 KiB, 32 dedupeBy names, idempotencyKey
	// 255 characters), each field at its largest.
	metadata := map[string]string{}
	for i := range 64 {
		metadata[pad(fmt.Sprintf("k%02d", i), 128)] = strings.Repeat("v", 2048)
	}
	schema := `{"type":"object","description":"` + strings.Repeat("d", 128<<10-40) + `"}`
	req := map[string]any{
		"sourceUrls":     n(100, func(i int) string { return pad(fmt.Sprintf("https://example.test/%03d/", i), 2048) }),
		"prompts":        n(16, func(int) string { return strings.Repeat("p", 64<<10) }),
		"neural":         map[string]any{"type": "NEURAL_CLIENT_TYPE_PROVIDER_2", "model": strings.Repeat("m", 256), "apiKey": strings.Repeat("k", 4096)},
		"ocr":            map[string]any{"provider": "NEURAL_CLIENT_TYPE_PROVIDER_1", "model": strings.Repeat("m", 256), "providerKey": strings.Repeat("k", 4096)},
		"responseSchema": schema,
		"merge":          map[string]any{"enabled": true, "dedupeBy": n(32, func(i int) string { return pad(fmt.Sprintf("f%02d", i), 256) })},
		"title":          strings.Repeat("é", 1024),
		"metadata":       metadata,
		"webhookUrl":     pad("https://hooks.example.test/", 2048),
		"webhookSecret":  strings.Repeat("s", 4096),
		"idempotencyKey": strings.Repeat("é", 255),
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	resp := env.doJSON("POST", "/v1/jobs", keyAlice, string(body))
	if got := readBody(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("a %d-byte request of fields at their caps: %d %.200s", len(body), resp.StatusCode, got)
	}
	if got := env.svc.lastRequest(); len(got.GetPrompts()) != 16 || len(got.GetSourceUrls()) != 100 || len(got.GetMetadata()) != 64 {
		t.Errorf("the service got %d prompts, %d sourceUrls, %d metadata pairs", len(got.GetPrompts()), len(got.GetSourceUrls()), len(got.GetMetadata()))
	}
}

func TestWarningHeaderOnREST(t *testing.T) {
	env := startServer(t)
	t.Run("unknown fields and consensus mode names are ignored and named", func(t *testing.T) {
		body := `{"sourceUrls":["https://example.test/a.txt"],"merge":{"enabled":true,"dedupBy":["id"]},
			"consensus":{"mode":"CONSENSUS_MODE_SEVEN_RUNS"},"responseSchema":"{}"}`
		resp := env.doJSON("POST", "/v1/jobs", keyAlice, body)
		got := decodeObject(t, readBody(t, resp))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, got)
		}
		want := "ignored: merge.dedupBy, consensus.mode=CONSENSUS_MODE_SEVEN_RUNS"
		if h := resp.Header.Get(WarningHeader); h != want {
			t.Errorf("%s = %q, want %q", WarningHeader, h, want)
		}
		if req := env.svc.lastRequest(); req.GetConsensus().Mode != nil || !req.GetMerge().GetEnabled() {
			t.Errorf("service saw consensus %v merge %v; want mode unset, merge kept", req.GetConsensus(), req.GetMerge())
		}
		if got["consensus"].(map[string]any)["mode"] != "CONSENSUS_MODE_UNSPECIFIED" {
			t.Errorf("job consensus = %v", got["consensus"])
		}
	})
	t.Run("a clean request has no warning", func(t *testing.T) {
		resp := env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)
		if h, ok := resp.Header[WarningHeader]; ok {
			t.Errorf("%s = %q on a clean request", WarningHeader, h)
		}
	})
	t.Run("unknown query parameters are named", func(t *testing.T) {
		resp := env.doJSON("GET", "/v1/jobs?pageSiz=5", keyAlice, "")
		if resp.StatusCode != 200 || resp.Header.Get(WarningHeader) != "ignored: pageSiz" {
			t.Errorf("got %d %q", resp.StatusCode, resp.Header.Get(WarningHeader))
		}
	})
	// The path binds id; the gateway drops another one in the body or the
	// query, which a client that meant that one is told (audit-api3 F8).
	created := decodeObject(t, readBody(t, env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)))
	path := "/v1/jobs/" + created["id"].(string)
	for _, tt := range []struct {
		name, method, path, body, want string
	}{
		{"an id in the cancel body is named", "POST", path + ":cancel", `{"id":"job-other"}`, "ignored: id"},
		{"the body's id comes after its unknown names", "POST", path + ":cancel", `{"id":"job-other","tittle":1}`, "ignored: tittle, id"},
		{"an empty cancel body names nothing", "POST", path + ":cancel", `{}`, ""},
		{"an empty id in the cancel body is nothing to ignore", "POST", path + ":cancel", `{"id":""}`, ""},
		{"an id in the query of a job's path is named", "GET", path + "?id=job-other", "", "ignored: id"},
		{"an id in the query of a cancel is named", "POST", path + ":cancel?id=job-other", "", "ignored: id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.doJSON(tt.method, tt.path, keyAlice, tt.body)
			if got := resp.Header.Get(WarningHeader); got != tt.want {
				t.Errorf("%s = %q, want %q (status %d)", WarningHeader, got, tt.want, resp.StatusCode)
			}
			if tt.method == "GET" {
				if got := decodeObject(t, readBody(t, resp))["id"]; got != created["id"] {
					t.Errorf("got job %v, want the path's %v", got, created["id"])
				}
			}
		})
	}
}

// The upload, the download and the progress stream are not gateway routes
// and take no query parameters; they dropped every one unnamed, where the
// gateway's routes name what they ignore.
func TestWarningHeaderNamesTheQueryOfRoutesThatTakeNone(t *testing.T) {
	src := newProgressJobs()
	src.set("alice", "job-1", progress(job.StatusComplete, 1, 1, 1, 1))
	env := startServer(t, withProgress(src, nil))
	ct, body := multipartBody(t, nil, "file", "a.txt", "text")
	url := decodeObject(t, readBody(t, env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)))["url"].(string)
	file := "/v1/files/" + url[strings.LastIndex(url, "/")+1:]

	tests := []struct {
		name, method, path string
		parts              []formPart
		wantStatus         int
		want               string
	}{
		{"a download names its query", "GET", file + "?disposition=inline&download=1", nil, 200, "ignored: disposition, download"},
		{"a download's HEAD names its query", "HEAD", file + "?x=1", nil, 200, "ignored: x"},
		{"a download without a query has no warning", "GET", file, nil, 200, ""},
		{"an error answer names the query too", "GET", "/v1/files/01a20ec5-e041-7ed7-9602-355ab959519c?x=1", nil, 404, "ignored: x"},
		{"a progress stream names its query", "GET", "/v1/jobs/job-1/events?lastEventId=3", nil, 200, "ignored: lastEventId"},
		{"a progress stream without a query has no warning", "GET", "/v1/jobs/job-1/events", nil, 200, ""},
		{"an upload names its query before its skipped parts", "POST", "/v1/jobs/upload?name=b.txt",
			[]formPart{{"note", "", "x"}, {"file", "a.txt", "content"}}, 200, "ignored: name, note"},
		{"an upload names a query key once with a part of its name", "POST", "/v1/jobs/upload?note=1",
			[]formPart{{"file", "a.txt", "content"}, {"note", "", "x"}}, 200, "ignored: note"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			if tt.parts != nil {
				ct, body := multipartParts(t, false, tt.parts...)
				resp = env.do(tt.method, tt.path, keyAlice, ct, body)
			} else {
				resp = env.do(tt.method, tt.path, keyAlice, "", nil)
			}
			if raw := readBody(t, resp); resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, raw)
			}
			if got := resp.Header.Get(WarningHeader); got != tt.want {
				t.Errorf("%s = %q, want %q", WarningHeader, got, tt.want)
			}
		})
	}
}

func TestCreateBodiesTheServiceIgnoresPartsOf(t *testing.T) {
	env := startServer(t)
	const src = `"sourceUrls":["https://example.test/a.txt"]`
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantHeader string // "" for none
	}{
		{"an unknown consensus mode number is named like an unknown name",
			`{` + src + `,"responseSchema":"{}","consensus":{"mode":7}}`, 200, "ignored: consensus.mode=7"},
		{"a known consensus mode number is not named",
			`{` + src + `,"responseSchema":"{}","consensus":{"mode":2}}`, 200, ""},
		{"a webhook secret without a webhook URL is named",
			`{` + src + `,"webhookSecret":"s3cret"}`, 200, "ignored: webhookSecret"},
		{"a webhook secret with an empty webhook URL is named",
			`{` + src + `,"webhookUrl":"","webhookSecret":"s3cret"}`, 200, "ignored: webhookSecret"},
		{"a webhook secret with a webhook URL is used",
			`{` + src + `,"webhookUrl":"https://hooks.example.test/x","webhookSecret":"s3cret"}`, 200, ""},
		{"an empty webhook secret is nothing to ignore", `{` + src + `,"webhookSecret":""}`, 200, ""},
		// dedupeBy applies only to JSON answers with a responseSchema.
		{"dedupeBy without a responseSchema is named",
			`{` + src + `,"merge":{"enabled":true,"dedupeBy":["id"]}}`, 200, "ignored: merge.dedupeBy"},
		{"dedupeBy with a responseSchema is used",
			`{` + src + `,"responseSchema":"{}","merge":{"enabled":true,"dedupeBy":["id","number"]}}`, 200, ""},
		{"dedupeBy while merge is off is not named, as no merge field is",
			`{` + src + `,"merge":{"dedupeBy":["id"]}}`, 200, ""},
		{"a repeated dedupeBy name is named by its place",
			`{` + src + `,"responseSchema":"{}","merge":{"enabled":true,"dedupeBy":["id","no","id","no","id"]}}`, 200,
			"ignored: merge.dedupeBy[2], merge.dedupeBy[3], merge.dedupeBy[4]"},
		{"semantic names come in the request's field order",
			`{` + src + `,"webhookSecret":"s3cret","merge":{"enabled":true,"dedupeBy":["id"]}}`, 200, "ignored: merge.dedupeBy, webhookSecret"},
		{"the semantic and the unknown come in one header",
			`{` + src + `,"tittle":"x","webhookSecret":"s3cret"}`, 200, "ignored: tittle, webhookSecret"},
		{"a body starting with a byte order mark is read", "\ufeff" + validCreate, 200, ""},
		{"only one byte order mark is skipped", "\ufeff\ufeff" + validCreate, 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.doJSON("POST", "/v1/jobs", keyAlice, tt.body)
			body := readBody(t, resp)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if got := resp.Header.Get(WarningHeader); got != tt.wantHeader {
				t.Errorf("%s = %q, want %q", WarningHeader, got, tt.wantHeader)
			}
		})
	}
	t.Run("the body after a byte order mark reaches the service", func(t *testing.T) {
		env.doJSON("POST", "/v1/jobs", keyAlice, "\ufeff"+`{`+src+`,"title":"bom"}`)
		if got := env.svc.lastRequest().GetTitle(); got != "bom" {
			t.Errorf("title = %q, want bom", got)
		}
	})
}

func TestMetricsUseRoutePatterns(t *testing.T) {
	env := startServer(t)
	env.doJSON("GET", "/v1/jobs/job-123456", keyAlice, "")
	env.doJSON("GET", "/v1/jobs/job-123456/result", keyAlice, "")
	env.doJSON("GET", "/v1/jobs", "", "")
	env.doJSON("GET", "/random-"+strings.Repeat("a", 10), "", "")
	body := readBody(t, env.do("GET", "/metrics", "", "", nil))
	for _, want := range []string{
		`docjobs_http_requests_total{code="404",method="GET",route="/v1/jobs/{id}"} 1`,
		`docjobs_http_requests_total{code="401",method="GET",route="/v1/jobs"} 1`,
		`docjobs_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`docjobs_http_request_duration_seconds_count{method="GET",route="/v1/jobs/{id}/result"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, "job-123456") || strings.Contains(body, "random-") {
		t.Errorf("a raw path reached a metric label")
	}
}

func TestRequestLogNamesRouteAndAccountButNoSecrets(t *testing.T) {
	env := startServer(t)
	env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)
	logs := env.logs.String()
	var found bool
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "http request" || rec["route"] != "/v1/jobs" {
			continue
		}
		found = true
		if rec["method"] != "POST" || rec["status"] != float64(200) || rec["account_id"] != "alice" || rec["duration"] == nil {
			t.Errorf("request log line incomplete: %s", line)
		}
	}
	if !found {
		t.Errorf("no request log line for POST /v1/jobs:\n%s", logs)
	}
	for _, secret := range []string{keyAlice, "secret-ocr-key"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q", secret)
		}
	}
}

func TestServeShutsDownGracefully(t *testing.T) {
	env := startServer(t)
	env.doJSON("POST", "/v1/jobs", keyAlice, validCreate)
	started, release := env.svc.blockNextGet()

	type result struct {
		code int
		err  error
	}
	inflight := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("GET", env.baseURL+"/v1/jobs/job-1", nil)
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			inflight <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		inflight <- result{code: resp.StatusCode}
	}()
	<-started

	stopped := make(chan error, 1)
	go func() { stopped <- env.stop() }()
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned while a request was in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if r := <-inflight; r.err != nil || r.code != 200 {
		t.Errorf("in-flight request: %d %v", r.code, r.err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve = %v, want nil after a graceful shutdown", err)
	}
	if _, err := http.Get(env.baseURL + "/healthz"); err == nil {
		t.Errorf("the listener still accepts after shutdown")
	}
}

func TestNewRequiresItsDependencies(t *testing.T) {
	svc, files := newJobService(), newDiskFiles(t, 10)
	authn := auth.NewAuthenticator(newStaticKeys(nil))
	tests := []struct {
		name string
		deps Deps
	}{
		{"without a service", Deps{Files: files, Auth: authn}},
		{"without files", Deps{Service: svc, Auth: authn}},
		{"without an authenticator", Deps{Service: svc, Files: files}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" New fails", func(t *testing.T) {
			if _, err := New(Config{}, tt.deps); err == nil {
				t.Error("New succeeded")
			}
		})
	}
	t.Run("two servers on one registry fail clearly", func(t *testing.T) {
		reg := NewRegistry()
		deps := Deps{Service: svc, Files: files, Auth: authn, Registry: reg}
		if _, err := New(Config{}, deps); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{}, deps); err == nil || !strings.Contains(err.Error(), "one Server per registry") {
			t.Errorf("second New: %v", err)
		}
	})
}

func TestARepeatedQueryParameterIsNamedAsSent(t *testing.T) {
	env := startServer(t)
	m := wantStatusBody(t, env.do("GET", "/v1/jobs?pageSize=1&pageSize=2", keyAlice, "", nil), 400, codes.InvalidArgument, true)
	if want := "pageSize: expected one value, got 2"; m["message"] != want {
		t.Errorf("message = %q, want %q", m["message"], want)
	}
}

func TestALoneSurrogateEscapeNamesTheField(t *testing.T) {
	env := startServer(t)
	tests := []struct {
		name, title, wantMessage string
	}{
		{"a lone high surrogate is 400 naming the field", `\ud800`, "title: invalid UTF-16 surrogate in string"},
		{"a lone low surrogate is 400 naming the field", `x\udc00`, "title: invalid UTF-16 surrogate in string"},
		{"a surrogate pair is a character", `\ud83d\ude00`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := env.doJSON("POST", "/v1/jobs", keyAlice, `{"sourceUrls":["https://a.test/x.txt"],"title":"`+tt.title+`"}`)
			if tt.wantMessage == "" {
				if body := readBody(t, resp); resp.StatusCode != 200 || !strings.Contains(body, `"title":"😀"`) {
					t.Errorf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			m := wantStatusBody(t, resp, 400, codes.InvalidArgument, true)
			if m["message"] != tt.wantMessage {
				t.Errorf("message = %q, want %q", m["message"], tt.wantMessage)
			}
		})
	}
}
