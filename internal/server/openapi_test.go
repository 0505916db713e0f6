package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	openapi_v3 "github.com/google/gnostic/openapiv3"
	"google.golang.org/grpc/codes"

	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// The served /openapi.yaml is what a generated client is built from. Every
// operation it describes is asked here as a client would: with the key and
// something the service ignores, without a key, past the account's rate,
// and while the key store cannot be read. Each answer's status must be
// described, with the headers it carries (Docjobs-Warning, Retry-After,
// WWW-Authenticate) and its media type; and the document must say that the
// key goes in a bearer Authorization header.
func TestOpenAPIDeclaresWhatTheServerAnswers(t *testing.T) {
	rs := newRealService(t, api.Config{})
	env := startServer(t, func(_ *Config, d *Deps) { d.Service, d.Files, d.Results = rs.svc, rs.svc, rs.svc })
	doc := servedOpenAPI(t, env)

	created := decodeObject(t, readBody(t, env.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody)))
	jobID, _ := created["id"].(string)
	ct, first := multipartBody(t, nil, "file", "a.txt", "some text")
	uploaded := decodeObject(t, readBody(t, env.do("POST", "/v1/jobs/upload", keyAlice, ct, first)))
	fileURL, _ := uploaded["url"].(string)
	fileID := fileURL[strings.LastIndex(fileURL, "/")+1:]
	if jobID == "" || fileID == "" {
		t.Fatalf("setup: job %q, file %q", jobID, fileID)
	}

	// One request per operation, in an order that deletes last. warn: the
	// request holds something the service ignores, so the answer names it.
	type call struct {
		op   string // "METHOD /path/{template}" as the document lists it
		path string
		body func() (contentType string, body io.Reader) // nil: none
		want int
		warn bool
	}
	json := func(s string) func() (string, io.Reader) {
		return func() (string, io.Reader) { return "application/json", strings.NewReader(s) }
	}
	form := func() (string, io.Reader) {
		return multipartBody(t, map[string]string{"note": "skipped"}, "file", "b.txt", "more text")
	}
	calls := []call{
		{"POST /v1/jobs", "/v1/jobs", json(strings.Replace(limitsCreateBody, "{", `{"tittle":"x",`, 1)), 200, true},
		{"GET /v1/jobs", "/v1/jobs?bogus=1", nil, 200, true},
		{"GET /v1/jobs/{id}", "/v1/jobs/" + jobID + "?bogus=1", nil, 200, true},
		{"GET /v1/jobs/{id}/result", "/v1/jobs/" + jobID + "/result?bogus=1", nil, 200, true},
		{"GET /v1/jobs/{id}/events", "/v1/jobs/" + jobID + "/events?bogus=1", nil, http.StatusNotImplemented, true}, // no ProgressSource here
		{"POST /v1/jobs/upload", "/v1/jobs/upload", form, 200, true},
		{"GET /v1/files", "/v1/files?bogus=1", nil, 200, true},
		{"GET /v1/files/{id}", "/v1/files/" + fileID + "?bogus=1", nil, 200, true},
		{"POST /v1/jobs/{id}:cancel", "/v1/jobs/" + jobID + ":cancel", json(`{"id":"another"}`), 200, true},
		{"DELETE /v1/files/{id}", "/v1/files/" + fileID + "?bogus=1", nil, 200, true},
		{"DELETE /v1/jobs/{id}", "/v1/jobs/" + jobID + "?bogus=1", nil, 200, true},
	}
	var described []string
	for o := range doc.operations() {
		described = append(described, o)
	}
	var asked []string
	for _, c := range calls {
		asked = append(asked, c.op)
	}
	slices.Sort(described)
	slices.Sort(asked)
	if !slices.Equal(described, asked) {
		t.Fatalf("the document describes %q; the test asks %q", described, asked)
	}
	send := func(env *testEnv, c call, key string) *http.Response {
		t.Helper()
		method, _, _ := strings.Cut(c.op, " ")
		var contentType string
		var body io.Reader
		if c.body != nil {
			contentType, body = c.body()
		}
		return env.do(method, c.path, key, contentType, body)
	}

	t.Run("the key is a bearer Authorization header, needed everywhere", func(t *testing.T) {
		doc.wantBearerEverywhere(t)
	})
	t.Run("answers with the key", func(t *testing.T) {
		for _, c := range calls {
			resp := send(env, c, keyAlice)
			if resp.StatusCode != c.want {
				t.Errorf("%s: status %d, want %d: %s", c.op, resp.StatusCode, c.want, readBody(t, resp))
				continue
			}
			if got := resp.Header.Get(WarningHeader) != ""; got != c.warn {
				t.Errorf("%s: %s %q, want it present: %v", c.op, WarningHeader, resp.Header.Get(WarningHeader), c.warn)
			}
			doc.wantDescribed(t, c.op, resp)
		}
	})
	t.Run("answers without a key", func(t *testing.T) {
		for _, c := range calls {
			resp := send(env, c, "")
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: status %d, WWW-Authenticate %q; want 401 with it", c.op, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			doc.wantDescribed(t, c.op, resp)
		}
	})
	t.Run("answers past the account's rate", func(t *testing.T) {
		limited := startServer(t, withService(t, api.Config{}), withRate(1, 1, newFakeClock()))
		wantOK(t, limited.doJSON("GET", "/v1/jobs", keyAlice, ""), "the one request of the burst")
		for _, c := range calls {
			resp := send(limited, c, keyAlice)
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Errorf("%s: status %d, Retry-After %q; want 429 with it", c.op, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			doc.wantDescribed(t, c.op, resp)
		}
	})
	t.Run("answers while the key store cannot be read", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "keys.db"), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		down := startServer(t, func(_ *Config, d *Deps) { d.Auth = auth.NewAuthenticator(st) })
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			resp := send(down, c, keyAlice)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Errorf("%s: status %d, Retry-After %q; want 503 with it", c.op, resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			doc.wantDescribed(t, c.op, resp)
		}
	})
	t.Run("a create past the active jobs limit", func(t *testing.T) {
		full := startServer(t, withService(t, api.Config{AccountMaxActiveJobs: 1}))
		wantOK(t, full.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody), "the one job allowed")
		resp := send(full, calls[0], keyAlice)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.Header.Get(WarningHeader) == "" {
			t.Errorf("status %d, Retry-After %q, %s %q; want 429 with both", resp.StatusCode, resp.Header.Get("Retry-After"), WarningHeader, resp.Header.Get(WarningHeader))
		}
		doc.wantDescribed(t, calls[0].op, resp)
	})
	t.Run("the cancel body is optional", func(t *testing.T) {
		if body := doc.requestBody(t, "POST /v1/jobs/{id}:cancel"); body.GetRequired() {
			t.Errorf("the cancel body is described as required")
		}
		j := decodeObject(t, readBody(t, env.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody)))
		id, _ := j["id"].(string)
		resp := env.do("POST", "/v1/jobs/"+id+":cancel", keyAlice, "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("a cancel without a body: status %d: %s", resp.StatusCode, readBody(t, resp))
		}
		doc.wantDescribed(t, "POST /v1/jobs/{id}:cancel", resp)
	})
}

// openAPIDoc is the served document, parsed by gnostic.
type openAPIDoc struct {
	*openapi_v3.Document
}

func servedOpenAPI(t *testing.T, env *testEnv) openAPIDoc {
	t.Helper()
	resp := env.do("GET", "/openapi.yaml", "", "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.yaml: status %d", resp.StatusCode)
	}
	doc, err := openapi_v3.ParseDocument([]byte(readBody(t, resp)))
	if err != nil {
		t.Fatalf("parse /openapi.yaml: %v", err)
	}
	return openAPIDoc{doc}
}

// operations lists the operations as "METHOD /path".
func (d openAPIDoc) operations() map[string]*openapi_v3.Operation {
	ops := map[string]*openapi_v3.Operation{}
	for _, p := range d.GetPaths().GetPath() {
		item := p.GetValue()
		for method, op := range map[string]*openapi_v3.Operation{
			"GET": item.GetGet(), "POST": item.GetPost(), "PUT": item.GetPut(),
			"PATCH": item.GetPatch(), "DELETE": item.GetDelete(), "HEAD": item.GetHead(),
		} {
			if op != nil {
				ops[method+" "+p.GetName()] = op
			}
		}
	}
	return ops
}

// wantBearerEverywhere checks for an HTTP bearer scheme that the document
// requires globally and that no operation lifts.
func (d openAPIDoc) wantBearerEverywhere(t *testing.T) {
	t.Helper()
	var scheme string
	for _, s := range d.GetComponents().GetSecuritySchemes().GetAdditionalProperties() {
		if ss := s.GetValue().GetSecurityScheme(); ss.GetType() == "http" && strings.EqualFold(ss.GetScheme(), "bearer") {
			scheme = s.GetName()
		}
	}
	if scheme == "" {
		t.Fatalf("no HTTP bearer scheme in components.securitySchemes")
	}
	required := false
	for _, req := range d.GetSecurity() {
		for _, s := range req.GetAdditionalProperties() {
			required = required || s.GetName() == scheme
		}
	}
	if !required {
		t.Errorf("security does not require %q", scheme)
	}
	for name, op := range d.operations() {
		if op.Security != nil {
			t.Errorf("%s overrides the document's security with %v", name, op.GetSecurity())
		}
	}
}

// checkedHeaders are the headers a client of the API acts on.
var checkedHeaders = []string{WarningHeader, "Retry-After", "WWW-Authenticate"}

// wantDescribed checks resp against what the document says operation op
// answers with its status: the response is described (by its code or by
// default), every checked header resp carries is declared on it, every
// required header it declares is there, and its media type is one the
// response lists.
func (d openAPIDoc) wantDescribed(t *testing.T, op string, resp *http.Response) {
	t.Helper()
	o := d.operations()[op]
	if o == nil {
		t.Fatalf("%s is not described", op)
	}
	code := strconv.Itoa(resp.StatusCode)
	var r *openapi_v3.ResponseOrReference
	for _, nr := range o.GetResponses().GetResponseOrReference() {
		if nr.GetName() == code {
			r = nr.GetValue()
		}
	}
	if r == nil {
		r = o.GetResponses().GetDefault()
	}
	if r == nil {
		t.Errorf("%s: %d is not described, and there is no default", op, resp.StatusCode)
		return
	}
	described := d.response(t, r)
	declared := map[string]*openapi_v3.Header{}
	for _, h := range described.GetHeaders().GetAdditionalProperties() {
		declared[http.CanonicalHeaderKey(h.GetName())] = d.header(t, h.GetValue())
	}
	for _, name := range checkedHeaders {
		key := http.CanonicalHeaderKey(name)
		if v := resp.Header.Get(name); v != "" && declared[key] == nil {
			t.Errorf("%s: the %d answer carries %s: %q, which its description does not declare", op, resp.StatusCode, name, v)
		}
	}
	for name, h := range declared {
		if h.GetRequired() && resp.Header.Get(name) == "" {
			t.Errorf("%s: the %d answer lacks %s, which its description requires", op, resp.StatusCode, name)
		}
	}
	body, _ := io.ReadAll(resp.Body)
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var listed []string
	for _, m := range described.GetContent().GetAdditionalProperties() {
		listed = append(listed, m.GetName())
	}
	if len(body) > 0 && !slices.Contains(listed, mediaType) && !slices.Contains(listed, "*/*") {
		t.Errorf("%s: the %d answer is %s (%.80q), its description lists %q", op, resp.StatusCode, mediaType, bytes.TrimSpace(body), listed)
	}
}

// requestBody returns the request body op describes, its reference resolved.
func (d openAPIDoc) requestBody(t *testing.T, op string) *openapi_v3.RequestBody {
	t.Helper()
	rb := d.operations()[op].GetRequestBody()
	if ref := rb.GetReference().GetXRef(); ref != "" {
		for _, named := range d.GetComponents().GetRequestBodies().GetAdditionalProperties() {
			if "#/components/requestBodies/"+named.GetName() == ref {
				return named.GetValue().GetRequestBody()
			}
		}
		t.Fatalf("%s: %s does not resolve", op, ref)
	}
	if rb.GetRequestBody() == nil {
		t.Fatalf("%s describes no request body", op)
	}
	return rb.GetRequestBody()
}

func (d openAPIDoc) response(t *testing.T, r *openapi_v3.ResponseOrReference) *openapi_v3.Response {
	t.Helper()
	ref := r.GetReference().GetXRef()
	if ref == "" {
		return r.GetResponse()
	}
	for _, named := range d.GetComponents().GetResponses().GetAdditionalProperties() {
		if "#/components/responses/"+named.GetName() == ref {
			return named.GetValue().GetResponse()
		}
	}
	t.Fatalf("%s does not resolve", ref)
	return nil
}

func (d openAPIDoc) header(t *testing.T, h *openapi_v3.HeaderOrReference) *openapi_v3.Header {
	t.Helper()
	ref := h.GetReference().GetXRef()
	if ref == "" {
		return h.GetHeader()
	}
	for _, named := range d.GetComponents().GetHeaders().GetAdditionalProperties() {
		if "#/components/headers/"+named.GetName() == ref {
			return named.GetValue().GetHeader()
		}
	}
	t.Fatalf("%s does not resolve", ref)
	return nil
}

// schema returns the component schema named name.
func (d openAPIDoc) schema(t *testing.T, name string) *openapi_v3.Schema {
	t.Helper()
	for _, named := range d.GetComponents().GetSchemas().GetAdditionalProperties() {
		if named.GetName() == name {
			return named.GetValue().GetSchema()
		}
	}
	t.Fatalf("no component schema %s", name)
	return nil
}

// property returns the property name of s.
func property(t *testing.T, s *openapi_v3.Schema, name string) *openapi_v3.Schema {
	t.Helper()
	for _, p := range s.GetProperties().GetAdditionalProperties() {
		if p.GetName() == name {
			return p.GetValue().GetSchema()
		}
	}
	t.Fatalf("no property %s", name)
	return nil
}

// The create rules of the spec's table that a schema can state are stated
// in /openapi.yaml, and each holds on the server exactly at its bound: a
// generated client or a validator reading the document refuses what the
// server refuses, and nothing it accepts.
func TestOpenAPIStatesTheCreateRulesTheServerEnforces(t *testing.T) {
	env := startServer(t, withService(t, api.Config{}))
	doc := servedOpenAPI(t, env)
	create := func(edit func(body map[string]any)) *http.Response {
		t.Helper()
		body := map[string]any{}
		if err := json.Unmarshal([]byte(limitsCreateBody), &body); err != nil {
			t.Fatal(err)
		}
		edit(body)
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return env.doJSON("POST", "/v1/jobs", keyAlice, string(b))
	}
	wantRefused := func(t *testing.T, resp *http.Response, message string) {
		t.Helper()
		if m := wantStatusBody(t, resp, 400, codes.InvalidArgument, true); m["message"] != message {
			t.Errorf("message = %q, want %q", m["message"], message)
		}
	}
	wantAccepted := func(t *testing.T, resp *http.Response) {
		t.Helper()
		if body := readBody(t, resp); resp.StatusCode != http.StatusOK {
			t.Errorf("status %d, want 200: %s", resp.StatusCode, body)
		}
	}

	for _, tt := range []struct {
		schema, path string // path: the field's name in messages, before the property
		want         []string
	}{
		{"CreateJobRequest", "", []string{"sourceUrls", "neural", "ocr"}},
		{"Ocr", "ocr.", []string{"provider", "model", "providerKey"}},
	} {
		required := doc.schema(t, tt.schema).GetRequired()
		if !slices.Equal(required, tt.want) {
			t.Errorf("%s: required = %q, want %q", tt.schema, required, tt.want)
		}
		for _, name := range required {
			t.Run(tt.path+name+" is required", func(t *testing.T) {
				wantRefused(t, create(func(body map[string]any) {
					if tt.path == "" {
						delete(body, name)
					} else {
						delete(body["ocr"].(map[string]any), name)
					}
				}), tt.path+name+": required")
			})
		}
	}
	t.Run("sourceUrls has at least minItems", func(t *testing.T) {
		if got := property(t, doc.schema(t, "CreateJobRequest"), "sourceUrls").GetMinItems(); got != 1 {
			t.Fatalf("minItems = %d, want 1", got)
		}
		wantRefused(t, create(func(body map[string]any) { body["sourceUrls"] = []string{} }), "sourceUrls: required")
	})
	t.Run("idempotencyKey has at most maxLength characters", func(t *testing.T) {
		n := int(property(t, doc.schema(t, "CreateJobRequest"), "idempotencyKey").GetMaxLength())
		if n != 255 {
			t.Fatalf("maxLength = %d, want 255", n)
		}
		// Characters, not bytes: two bytes each.
		wantAccepted(t, create(func(body map[string]any) { body["idempotencyKey"] = strings.Repeat("é", n) }))
		wantRefused(t, create(func(body map[string]any) { body["idempotencyKey"] = strings.Repeat("é", n+1) }),
			"idempotencyKey: at most 255 characters")
	})
	t.Run("merge.dedupeBy has at most maxItems names", func(t *testing.T) {
		n := int(property(t, doc.schema(t, "MergeOptions"), "dedupeBy").GetMaxItems())
		if n != 32 {
			t.Fatalf("maxItems = %d, want 32", n)
		}
		names := func(k int) []string {
			out := make([]string, k)
			for i := range out {
				out[i] = "f" + strconv.Itoa(i)
			}
			return out
		}
		wantAccepted(t, create(func(body map[string]any) {
			body["merge"] = map[string]any{"enabled": true, "dedupeBy": names(n)}
		}))
		wantRefused(t, create(func(body map[string]any) {
			body["merge"] = map[string]any{"enabled": true, "dedupeBy": names(n + 1)}
		}), "merge.dedupeBy: at most 32 names")
	})
}
