package outbound

import (
	"net/url"
	"strings"
	"testing"
)

func TestDisplayKeepsWhereASourceIsAndNoneOfItsQueryValues(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"presigned S3 URL", "https://bucket.s3.amazonaws.com/scans/a.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261124&X-Amz-Signature=0123abcd",
			"https://bucket.s3.amazonaws.com/scans/a.pdf?X-Amz-Algorithm=…&X-Amz-Credential=…&X-Amz-Signature=…"},
		{"a value whose name says nothing", "http://files.example/get?id=42&s=c2VjcmV0", "http://files.example/get?id=…&s=…"},
		{"a bare token", "http://files.example/doc.pdf?abcdef0123456789", "http://files.example/doc.pdf?…"},
		{"an empty value and an empty parameter", "http://files.example/doc.pdf?dl=&&x=1", "http://files.example/doc.pdf?dl=…&&x=…"},
		{"user information", "https://user:pw@files.example/a.txt", "https://files.example/a.txt"},
		{"a fragment", "https://files.example/a.txt#access_token=abc", "https://files.example/a.txt"},
		{"no query", "https://files.example:8443/dir/a%20b.txt", "https://files.example:8443/dir/a%20b.txt"},
		{"an escaped name", "https://files.example/a?x%2Dsig=1", "https://files.example/a?x%2Dsig=…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DisplayString(tt.raw); got != tt.want {
				t.Errorf("DisplayString(%q) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
	if got := DisplayString("http://files.example/%zz?token=t"); got != "the source URL" {
		t.Errorf("an unparsable URL is shown as %q", got)
	}
}

// FuzzDisplay checks that no query value or fragment of a URL that
// parses survives Display.
func FuzzDisplay(f *testing.F) {
	f.Add("https://h/p", "X-Amz-Signature", "secretvalue", "frag")
	f.Add("http://h:80/a%20b", "t", "a&b=c", "")
	f.Fuzz(func(t *testing.T, base, name, value, fragment string) {
		if len(value) < 4 || strings.ContainsAny(value, "&=#%+?") || strings.Contains(base+name+fragment, value) {
			return // too short or not one value: it may occur in the kept parts by chance
		}
		u, err := url.Parse(base)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return
		}
		u.RawQuery = url.QueryEscape(name) + "=" + url.QueryEscape(value)
		u.Fragment = fragment + value
		got := Display(u)
		if strings.Contains(got, value) || strings.Contains(got, url.QueryEscape(value)) {
			t.Errorf("Display(%q) = %q keeps the value %q", u, got, value)
		}
	})
}

// causes lists err and every error it wraps, joined ones too.
