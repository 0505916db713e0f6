package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
)

// restUpload uploads content as name over REST and returns the answer's url.
func restUpload(t *testing.T, env *testEnv, key, name, content string) string {
	t.Helper()
	ct, body := multipartBody(t, nil, "file", name, content)
	resp := env.do("POST", "/v1/jobs/upload", key, ct, body)
	raw := readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload %s: %d %s", name, resp.StatusCode, raw)
	}
	var u struct{ URL string }
	if err := json.Unmarshal([]byte(raw), &u); err != nil {
		t.Fatal(err)
	}
	return u.URL
}

// restFilesPage is GET /v1/files with query as key: the page's files as
// JSON objects, its token, and the answer's status and body.
func restFilesPage(t *testing.T, env *testEnv, key string, query url.Values) (files []map[string]any, token string, code int, body string) {
	t.Helper()
	resp := env.doJSON("GET", "/v1/files?"+query.Encode(), key, "")
	body = readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		return nil, "", resp.StatusCode, body
	}
	m := decodeObject(t, body)
	list, ok := m["files"].([]any)
	if !ok {
		t.Fatalf(`the answer has no "files" array: %s`, body)
	}
	for _, f := range list {
		files = append(files, f.(map[string]any))
	}
	token, _ = m["nextPageToken"].(string)
	return files, token, resp.StatusCode, body
}

func TestUploadsAreListedOverREST(t *testing.T) {
	env := startServer(t, withService(t, api.Config{}))
	var want []string // alice's upload URLs, newest first
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		want = slices.Insert(want, 0, restUpload(t, env, keyAlice, name, "content of "+name))
	}
	bobs := restUpload(t, env, keyBob, "bob.txt", "bob's")

	var got []string
	query := url.Values{"pageSize": {"2"}}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("listing does not end")
		}
		files, token, code, body := restFilesPage(t, env, keyAlice, query)
		if code != http.StatusOK || len(files) == 0 || len(files) > 2 {
			t.Fatalf("page %d: %d, %d files: %s", pages, code, len(files), body)
		}
		for _, f := range files {
			got = append(got, f["url"].(string))
		}
		if pages == 0 {
			// camelCase as every answer but the upload's; sizeBytes, an
			// int64, a string as protojson writes every int64.
			f := files[0]
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range f {
					if !yield(k) {
						return
					}
				}
			})
			if !slices.Equal(keys, []string{"contentType", "created", "id", "name", "sizeBytes", "url"}) {
				t.Errorf("a listed file's keys are %v", keys)
			}
			if f["name"] != "c.txt" || f["sizeBytes"] != "16" || f["contentType"] != "text/plain; charset=utf-8" ||
				f["url"] != want[0] || !strings.HasSuffix(want[0], "/v1/files/"+f["id"].(string)) {
				t.Errorf("the newest file is listed as %v, want c.txt of 16 bytes at %s", f, want[0])
			}
		}
		if token == "" {
			break
		}
		query.Set("pageToken", token)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("alice's uploads listed as %v, want %v", got, want)
	}

	t.Run("another account lists only its own", func(t *testing.T) {
		files, _, code, body := restFilesPage(t, env, keyBob, nil)
		if code != http.StatusOK || len(files) != 1 || files[0]["url"] != bobs {
			t.Fatalf("bob's listing: %d %s", code, body)
		}
	})
	t.Run("another account's page token is 400", func(t *testing.T) {
		_, token, _, _ := restFilesPage(t, env, keyAlice, url.Values{"pageSize": {"1"}})
		resp := env.doJSON("GET", "/v1/files?"+url.Values{"pageToken": {token}}.Encode(), keyBob, "")
		if m := wantStatusBody(t, resp, http.StatusBadRequest, codes.InvalidArgument, true); m["message"] != "pageToken: invalid" {
			t.Errorf("message = %v", m["message"])
		}
	})
	t.Run("no uploads is an empty array", func(t *testing.T) {
		if resp := env.doJSON("DELETE", "/v1/files/"+path.Base(bobs), keyBob, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("delete bob's upload: %d %s", resp.StatusCode, readBody(t, resp))
		}
		_, _, code, body := restFilesPage(t, env, keyBob, nil)
		if code != http.StatusOK || body != `{"files":[]}` {
			t.Fatalf("an account without uploads: %d %s", code, body)
		}
	})
	t.Run("without a key it is 401", func(t *testing.T) {
		wantStatusBody(t, env.doJSON("GET", "/v1/files", "", ""), http.StatusUnauthorized, codes.Unauthenticated, true)
	})
	t.Run("another method is 405 naming GET", func(t *testing.T) {
		resp := env.doJSON("POST", "/v1/files", keyAlice, "{}")
		if got := resp.Header.Get("Allow"); got != "GET" {
			t.Errorf("Allow = %q, want GET", got)
		}
		wantStatusBody(t, resp, http.StatusMethodNotAllowed, codes.Unimplemented, true)
	})
}

func TestUploadsAreListedOverGRPC(t *testing.T) {
	env := startServer(t, withService(t, api.Config{}))
	client, _, as := grpcClient(t, env)
	alice, bob := as(context.Background(), keyAlice), as(context.Background(), keyBob)
	var want []string
	for _, name := range []string{"a.txt", "b.txt", "c.txt"} {
		want = slices.Insert(want, 0, restUpload(t, env, keyAlice, name, "content of "+name))
	}
	bobs := restUpload(t, env, keyBob, "bob.txt", "bob's")

	var got []string
	first := ""
	for token := ""; ; {
		page, err := client.ListFiles(alice, &docjobsv1.ListFilesRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.GetFiles()) == 0 || len(page.GetFiles()) > 2 {
			t.Fatalf("a page of %d files", len(page.GetFiles()))
		}
		if first == "" {
			first = page.GetNextPageToken()
			if f := page.GetFiles()[0]; f.GetName() != "c.txt" || f.GetSizeBytes() != 16 || f.GetCreated() == nil {
				t.Errorf("the newest file is listed as %v", f)
			}
		}
		for _, f := range page.GetFiles() {
			got = append(got, f.GetUrl())
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("alice's uploads listed as %v, want %v", got, want)
	}

	page, err := client.ListFiles(bob, &docjobsv1.ListFilesRequest{})
	if err != nil || len(page.GetFiles()) != 1 || page.GetFiles()[0].GetUrl() != bobs {
		t.Fatalf("bob's listing: %v, %v; want only his upload", page, err)
	}
	_, err = client.ListFiles(bob, &docjobsv1.ListFilesRequest{PageToken: first})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != "pageToken: invalid" {
		t.Fatalf("bob with alice's page token: %v", err)
	}
	_, err = client.ListFiles(context.Background(), &docjobsv1.ListFilesRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without a key: %v", err)
	}
}
