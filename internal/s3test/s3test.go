// Package s3test runs a real S3 server for a test: versitygw's posix backend
// (github.com/versity/versitygw), in this process, on a loopback port, over a
// temporary directory. DESIGN.md §2 wants the s3:// storage path tested
// against a real S3 implementation rather than a fake; only tests import this
// package, so the gateway never reaches the docjobs binary.
package s3test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/s3blob" // the s3:// driver serve registers (internal/cli/open.go), for the URLs Bucket gives
)

// The root account of every test server. The AWS SDK that gocloud.dev's
// s3blob builds reads its credentials from the environment, so Start sets
// these there too.
const (
	AccessKey = "docjobs-test-access"
	SecretKey = "docjobs-test-secret"
	Region    = "us-east-1"
)

// Server is one running gateway.
type Server struct {
	// Endpoint is the gateway's base URL, http://127.0.0.1:PORT.
	Endpoint string
	client   *s3.Client
}

// Env is what a docjobs process needs to reach the server: the AWS
// credential variables (s3:// URLs carry no credentials) and no lookups of
// shared config files or instance metadata on the way.
func Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}
}

// Start runs a gateway until the test ends and points this process's AWS
// environment at it.
//
// The posix backend works relative to the current directory, which it
// changes to its root (posix.New calls os.Chdir), and versitygw supports one
// gateway per process. So Start uses t.Chdir, which restores the directory
// when the test ends and refuses parallel tests; a test reads its relative
// testdata paths before calling Start, or by absolute path.
func Start(t *testing.T) *Server {
	t.Helper()
	for _, kv := range Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root := t.TempDir()
	t.Chdir(root)

	// A port that was free a moment ago: embedgw binds its listeners from
	// address strings, not from a listener we could hand it. Another
	// process taking the port in between makes the start fail, retried.
	var lastErr error
	for range 3 {
		addr := freeAddr(t)
		s, err := run(t, root, addr)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("start versitygw: %v", lastErr)
	return nil
}

func run(t *testing.T, root, addr string) (*Server, error) {
	t.Helper()
	// The xattr store is versitygw's default; NoMeta would drop content
	// types and ETags, which s3blob reads back. CopyObjectThreshold is the
	// S3 limit of 5 GiB that versitygw's command line sets: left zero, every
	// CopyObject (an upload copied for a job) is refused as too large.
	be, err := posix.New(root, meta.XattrMeta{}, posix.PosixOpts{Concurrency: 64, CopyObjectThreshold: 5 << 30})
	if err != nil {
		return nil, fmt.Errorf("posix backend over %s: %w", root, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- embedgw.RunVersityGW(ctx, be, &embedgw.Config{
			RootUserAccess:    AccessKey,
			RootUserSecret:    SecretKey,
			Region:            Region,
			Ports:             []string{addr},
			MaxConnections:    256,
			MaxRequests:       256,
			MultipartMaxParts: 10000,
			Quiet:             true,
		})
	}()
	s := &Server{Endpoint: "http://" + addr}
	s.client = s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
	if err := waitReady(ctx, s.client, done); err != nil {
		cancel()
		<-done
		return nil, err
	}
	// The gateway must be gone before the next test starts one (one per
	// process) and before t.Chdir puts the directory back.
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("versitygw stopped: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("versitygw did not stop within 30s")
		}
	})
	return s, nil
}

// waitReady polls ListBuckets until the gateway answers.
func waitReady(ctx context.Context, c *s3.Client, done <-chan error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-done:
			return fmt.Errorf("versitygw exited at start: %w", err)
		default:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.ListBuckets(rctx, &s3.ListBucketsInput{})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw not ready within 20s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Bucket creates a bucket and returns the s3:// URL docjobs opens it by
// (DOCJOBS_STORAGE_URL), in the form the README documents.
func (s *Server) Bucket(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	q := url.Values{}
	q.Set("endpoint", s.Endpoint)
	q.Set("region", Region)
	q.Set("use_path_style", "true")
	return "s3://" + name + "?" + q.Encode()
}

// OpenBucket starts a server, creates a bucket named name on it and opens
// it by its s3:// URL, as serve opens DOCJOBS_STORAGE_URL; the bucket is
// closed when the test ends.
func OpenBucket(t *testing.T, name string) *blob.Bucket {
	t.Helper()
	u := Start(t).Bucket(t, name)
	bucket, err := blob.OpenBucket(context.Background(), u)
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	t.Cleanup(func() { bucket.Close() })
	return bucket
}

// Keys lists every object key in the bucket, sorted, read straight from the
// server (not through the code under test). Incomplete multipart uploads are
// listed as "upload:KEY": an abandoned one is storage the service leaks.
func (s *Server) Keys(t *testing.T, bucket string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list bucket %s: %v", bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	ups, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("list multipart uploads of %s: %v", bucket, err)
	}
	for _, u := range ups.Uploads {
		keys = append(keys, "upload:"+aws.ToString(u.Key))
	}
	sort.Strings(keys)
	return keys
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
