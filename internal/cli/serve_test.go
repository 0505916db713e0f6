package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/logtest"
)

// startServe runs serve with args and env until the test ends, and
// returns its stderr and a channel of its exit code.
func startServe(t *testing.T, env map[string]string, args ...string) (*logtest.Buffer, <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb logtest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, append([]string{"serve"}, args...), &out, &errb, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-code:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	return &errb, code
}

// logged waits for a line with msg in logs and returns it decoded.
func logged(t *testing.T, logs *logtest.Buffer, code <-chan int, msg string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for line := range strings.SplitSeq(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
				return m
			}
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited %d before logging %q:\n%s", c, msg, logs.String())
		default:
		}
	}
	t.Fatalf("no %q line in 30s:\n%s", msg, logs.String())
	return nil
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A worker records the provider and stage metrics: given DOCJOBS_ADDR it
// serves them, with its probes, and no API.
func TestAWorkerGivenAnAddressServesHealthAndMetrics(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_NODE_ID": "w1", "DOCJOBS_ADDR": "127.0.0.1:0"}
	logs, code := startServe(t, env, "--role=worker")
	addr := logged(t, logs, code, "listening")["addr"].(string)
	logged(t, logs, code, "workers started")
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ok", "/metrics": "go_goroutines"} {
		if c, body := get(t, "http://"+addr+path); c != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s = %d %q, want 200 with %q", path, c, body, want)
		}
	}
	if c, _ := get(t, "http://"+addr+"/v1/jobs"); c != http.StatusNotFound {
		t.Errorf("GET /v1/jobs on a worker = %d, want 404 (no API)", c)
	}
}

// By default a worker listens on nothing, so that it runs beside an api
// process on one host; it says how to give it a port.
func TestAWorkerWithoutAnAddressListensOnNothing(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_NODE_ID": "w1"}
	logs, code := startServe(t, env, "--role=worker")
	logged(t, logs, code, "workers started")
	if strings.Contains(logs.String(), `"msg":"listening"`) || !strings.Contains(logs.String(), "no health or metrics port: set DOCJOBS_ADDR") {
		t.Errorf("a worker without DOCJOBS_ADDR:\n%s\nwant no listener and a line saying how to get one", logs.String())
	}
}

// A port in use is refused before the database is made and the workers
// start.
func TestAnAddressInUseIsRefusedBeforeAnythingStarts(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, role := range []string{"all", "worker"} {
		t.Run(role, func(t *testing.T) {
			dir := t.TempDir()
			code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_ADDR": taken.Addr().String()},
				"serve", "--role="+role)
			if code != ExitError || !strings.Contains(stderr, "DOCJOBS_ADDR: listen "+taken.Addr().String()) {
				t.Fatalf("exit %d: %s; want %d naming DOCJOBS_ADDR", code, stderr, ExitError)
			}
			if strings.Contains(stderr, "workers started") {
				t.Errorf("workers started before the port was refused:\n%s", stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "docjobs.db")); !os.IsNotExist(err) {
				t.Errorf("database made before the port was refused: %v", err)
			}
		})
	}
}

// A value given as a flag is refused under the flag's name, then the
// variable's: the variable was never set.
func TestRefusalsOfFlagValuesNameTheFlag(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct{ name, flag, want string }{
		{"a port in use", "--addr=" + taken.Addr().String(), "docjobs: --addr: DOCJOBS_ADDR: listen " + taken.Addr().String()},
		{"an address that is not host:port", "--addr=notanaddr", "docjobs: usage: --addr: DOCJOBS_ADDR: want host:port"},
		{"an unknown role", "--role=bogus", "docjobs: usage: --role: DOCJOBS_ROLE: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": t.TempDir()}, "serve", tt.flag)
			if code == ExitOK || !strings.Contains(stderr, tt.want) {
				t.Fatalf("serve %s: exit %d %q; want it to say %q", tt.flag, code, stderr, tt.want)
			}
		})
	}
}

func TestStartUpRefusalsNameTheVariable(t *testing.T) {
	for name, value := range map[string]string{
		"DOCJOBS_LOG_LEVEL":  "verbose",
		"DOCJOBS_ROLE":       "bogus",
		"DOCJOBS_PUBLIC_URL": "ftp://x",
		"DOCJOBS_ADDR":       "notanaddr",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": dir, name: value}, "serve")
			if code != ExitUsage || !strings.HasPrefix(stderr, "docjobs: usage: "+name+": ") {
				t.Fatalf("%s=%s: exit %d %q; want %d and the variable named", name, value, code, stderr, ExitUsage)
			}
			if _, err := os.Stat(filepath.Join(dir, "docjobs.db")); !os.IsNotExist(err) {
				t.Errorf("database made before the refusal: %v", err)
			}
		})
	}
}

// startServeOut is startServe that also returns serve's stdout.
func startServeOut(t *testing.T, env map[string]string, args ...string) (stdout, stderr *logtest.Buffer, code <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb logtest.Buffer
	codes := make(chan int, 1)
	go func() {
		codes <- Run(ctx, append([]string{"serve"}, args...), &out, &errb, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-codes:
		case <-time.After(time.Minute):
			t.Error("serve did not stop")
		}
	})
	return &out, &errb, codes
}

// Without DOCJOBS_PUBLIC_URL the URLs handed out name the port serve
// listens on: the first start's curl example and an upload's url named
// :8080 whatever --addr said (audit-readme F1).
func TestTheURLsHandedOutNameThePortServeListensOn(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_LOG_LEVEL": "info"}
	out, logs, code := startServeOut(t, env, "--addr", "127.0.0.1:0")
	addr := logged(t, logs, code, "listening")["addr"].(string)
	_, port, _ := net.SplitHostPort(addr)
	base := "http://localhost:" + port
	var key string
	for deadline := time.Now().Add(30 * time.Second); key == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`curl -H 'Authorization: Bearer (dj_\S+)' (\S+)/v1/jobs`).FindStringSubmatch(out.String()); m != nil {
			if m[2] != base {
				t.Fatalf("the first start's example names %s, want %s:\n%s", m[2], base, out.String())
			}
			key = m[1]
		}
	}
	if key == "" {
		t.Fatalf("no curl example on stdout:\n%s", out.String())
	}
	if err := waitReady(context.Background(), "http://"+addr, nil); err != nil {
		t.Fatal(err)
	}
	c := newClient(clientConfig{server: "http://" + addr, apiKey: key})
	up, err := c.upload(context.Background(), writeFile(t, "a.txt", "Alpha.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(up.URL, base+"/v1/files/") {
		t.Errorf("upload url %s, want it under %s", up.URL, base)
	}
}

// A worker serves no API: it makes no key and names no address on stdout
// (it printed "docjobs at http://localhost:8080", audit-readme F16).
func TestAWorkerPrintsNoKeyAndNoAddress(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_NODE_ID": "w1", "DOCJOBS_LOG_LEVEL": "info"}
	out, logs, code := startServeOut(t, env, "--role=worker")
	logged(t, logs, code, "workers started")
	if out.String() != "" {
		t.Errorf("a worker's stdout: %q, want nothing", out.String())
	}
	if !strings.Contains(logs.String(), "DOCJOBS_PUBLIC_URL is unset: this worker names the files it stores") {
		t.Errorf("a worker without DOCJOBS_PUBLIC_URL does not say which URL it names files by:\n%s", logs.String())
	}
}

// A database or storage URL serve cannot use is bad configuration: exit 2
// naming the variable, before the database is made (audit-readme F9: exit
// 1, after the database was created and migrated).
func TestABadDatabaseOrStorageURLIsAUsageErrorBeforeTheDatabaseIsMade(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"DOCJOBS_STORAGE_URL", "gs://bucket", `docjobs: usage: DOCJOBS_STORAGE_URL: want file:///DIR or s3://BUCKET (S3, MinIO, R2), got scheme "gs"`},
		{"DOCJOBS_DATABASE_URL", "mysql://db/x", `docjobs: usage: DOCJOBS_DATABASE_URL: want sqlite://PATH or postgres://…, got scheme "mysql"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": dir, tt.name: tt.value}, "serve")
			if code != ExitUsage || !strings.HasPrefix(stderr, tt.want) {
				t.Fatalf("exit %d: %q; want %d starting %q", code, stderr, ExitUsage, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "docjobs.db")); !os.IsNotExist(err) {
				t.Errorf("database made before the refusal: %v", err)
			}
		})
	}
	// A bucket URL of a known scheme whose value its driver refuses is
	// found by opening the bucket, which serve does before the database;
	// it is configuration too (audit-ops3 F5: it exited 1).
	dir := t.TempDir()
	code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": dir, "DOCJOBS_STORAGE_URL": "file://" + dir + "/files?dir_file_mode=abc"}, "serve")
	if code != ExitUsage || !strings.Contains(stderr, "DOCJOBS_STORAGE_URL: open file://"+dir+"/files?dir_file_mode=…") {
		t.Fatalf("a bucket parameter the driver refuses: exit %d: %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "docjobs.db")); !os.IsNotExist(err) {
		t.Errorf("database made before the bucket was refused: %v", err)
	}
}

// An argument serve does not take is a usage error said as one (it lacked
// the "usage:" every other usage error has, audit-readme F16).
func TestAnExtraArgumentIsAUsageError(t *testing.T) {
	for _, args := range [][]string{{"serve", "extra"}, {"migrate", "extra"}, {"version", "extra"}} {
		code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": t.TempDir()}, args...)
		if want := `docjobs: usage: unknown command "extra" for "docjobs ` + args[0] + `"`; code != ExitUsage || !strings.HasPrefix(stderr, want) {
			t.Errorf("%v: exit %d %q; want %d starting %q", args, code, stderr, ExitUsage, want)
		}
	}
}

// With port 0 the start line named port 0 (addr=127.0.0.1:0,
// public_url=http://localhost:0), though the port bound is the one to
// reach (hunt-small).
func TestTheStartLineNamesThePortBound(t *testing.T) {
	env := map[string]string{"DOCJOBS_DATA_DIR": migratedDataDir(t), "DOCJOBS_NODE_ID": "w1", "DOCJOBS_ADDR": "127.0.0.1:0"}
	logs, code := startServe(t, env)
	addr := logged(t, logs, code, "listening")["addr"].(string)
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		t.Fatalf("listening on %q", addr)
	}
	config, _ := logged(t, logs, code, "starting docjobs")["config"].(string)
	for _, want := range []string{"addr=" + addr + " ", "public_url=http://localhost:" + port + " "} {
		if !strings.Contains(config, want) {
			t.Errorf("start line config %q lacks %q", config, want)
		}
	}
	if strings.Index(logs.String(), `"msg":"starting docjobs"`) > strings.Index(logs.String(), `"msg":"listening"`) {
		t.Errorf("the start line comes after the listening line:\n%s", logs.String())
	}
}
