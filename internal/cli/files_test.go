package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Uploads a submit leaves (no --wait) are listed by files, newest first,
// and files rm deletes them by id or by url, after which they are listed
// no more and their URLs are gone.
func TestFilesListsTheUploadsASubmitLeftAndRmDeletesThem(t *testing.T) {
	s := startService(t)
	a, b := writeFile(t, "a.txt", "Alpha.\n"), writeFile(t, "b.txt", "Bravo, longer.\n")
	for _, f := range []string{a, b} {
		if code, _, stderr := run(t, s.env(), "submit", f); code != ExitOK {
			t.Fatalf("submit %s: exit %d: %s", f, code, stderr)
		}
	}

	code, out, stderr := run(t, s.env(), "files")
	if code != ExitOK {
		t.Fatalf("files: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.HasSuffix(lines[1], "  b.txt") || !strings.Contains(lines[1], " 15 ") ||
		!strings.HasSuffix(lines[2], "  a.txt") || !strings.Contains(lines[2], " 7 ") {
		t.Fatalf("files table, want a header, b.txt (15 bytes) then a.txt (7):\n%s", out)
	}

	code, out, stderr = run(t, s.env(), "files", "--json")
	var listed []struct{ ID, URL, Name, SizeBytes, ContentType, Created string }
	if code != ExitOK || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 2 {
		t.Fatalf("files --json: exit %d, %s%s", code, out, stderr)
	}
	if l := listed[0]; l.Name != "b.txt" || l.SizeBytes != "15" || l.URL != s.base+"/v1/files/"+l.ID || l.ContentType == "" || l.Created == "" {
		t.Errorf("files --json lists b.txt as %+v", l)
	}

	code, _, stderr = run(t, s.env(), "files", "rm", listed[0].ID, listed[1].URL)
	if code != ExitOK || strings.Count(stderr, "deleted the upload ") != 2 {
		t.Fatalf("files rm: exit %d: %s", code, stderr)
	}
	uploadGone(t, s, listed[0].URL)
	uploadGone(t, s, listed[1].URL)
	if code, out, stderr = run(t, s.env(), "files", "--json"); code != ExitOK || strings.TrimSpace(out) != "[]" {
		t.Fatalf("files --json after rm: exit %d, %q%s", code, out, stderr)
	}

	code, _, stderr = run(t, s.env(), "files", "rm", listed[0].ID)
	if code != ExitError || !strings.Contains(stderr, "file not found (HTTP 404)") {
		t.Errorf("files rm of a deleted upload: exit %d: %s", code, stderr)
	}
}

// files rm goes on past an upload it cannot delete and exits 1 naming it.
func TestFilesRmGoesOnPastAFailure(t *testing.T) {
	var mu sync.Mutex
	var deleted []string
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/files/")
		if id == "gone" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprint(w, `{"code":5,"message":"file not found"}`)
			return
		}
		mu.Lock()
		deleted = append(deleted, id)
		mu.Unlock()
		_, _ = fmt.Fprint(w, `{}`)
	})
	code, _, stderr := run(t, env, "files", "rm", "f1", "gone", "http://svc/base/v1/files/f3")
	if code != ExitError || !strings.Contains(stderr, "gone: file not found (HTTP 404) (1 of 3 uploads not deleted)") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(deleted, ",") != "f1,f3" {
		t.Errorf("deleted %v, want f1 and f3", deleted)
	}
}

// Usage errors send nothing; files rm checks every argument before it
// deletes any.
func TestFilesUsageErrors(t *testing.T) {
	env, requests := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
	})
	for _, args := range [][]string{
		{"files", "--limit", "0"},
		{"files", "extra"},
		{"files", "rm"},
		{"files", "rm", "http://svc/v1/jobs/j1"},
		{"files", "rm", "a/b"},
		// A malformed argument after good ones: nothing is deleted.
		{"files", "rm", "f1", "http://svc/v1/files/f2", "http://svc/v1/files/"},
	} {
		if code, _, stderr := run(t, env, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, ExitUsage, stderr)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests sent for usage errors", n)
	}
}

// files follows the service's pages up to --limit and says when there
// are more.
func TestFilesFollowsPagesUpToTheLimit(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	env, _ := fakeService(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		asked = append(asked, q.Get("pageSize")+"/"+q.Get("pageToken"))
		mu.Unlock()
		n := 0
		_, _ = fmt.Sscan(q.Get("pageToken"), &n)
		fmt.Fprintf(w, `{"files":[{"id":"f%d","sizeBytes":"1"},{"id":"f%d","sizeBytes":"2"}],"nextPageToken":"%d"}`, n, n+1, n+2)
	})
	code, out, stderr := run(t, env, "files", "--limit", "5", "--json")
	if code != ExitOK || !strings.Contains(stderr, "more uploads than --limit 5") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var files []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &files); err != nil || len(files) != 5 || files[4].ID != "f4" {
		t.Fatalf("files --limit 5 printed %v (%v), want f0…f4:\n%s", files, err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"5/", "3/2", "1/4"}; fmt.Sprint(asked) != fmt.Sprint(want) {
		t.Errorf("pages asked %v, want %v", asked, want)
	}
}
