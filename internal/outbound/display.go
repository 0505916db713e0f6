package outbound

import (
	"net/url"
	"strings"
)

// Display is a source URL as an error, and so a row, a log line and
// River's job row, show it: scheme, host, path and the names of its query
// parameters, without user information, query values or fragment. A
// presigned URL's signature (X-Amz-Signature, a token=) is a bearer
// credential of the caller's, and an error's text is kept where the job
// is not: in logs, and in River's rows for a day after the job is
// deleted. Every value goes, not only those whose names look secret (as
// the logged database URL does it): a source's server names its
// parameters as it likes (sig, s, p). A parameter without "=" may be a
// bare token and is shown as "…" whole. The row's file and the job's
// sourceUrls keep the URL as given.
func Display(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		params := strings.Split(c.RawQuery, "&")
		for i, p := range params {
			switch name, _, named := strings.Cut(p, "="); {
			case named:
				params[i] = name + "=…"
			case p != "":
				params[i] = "…"
			}
		}
		c.RawQuery = strings.Join(params, "&")
	}
	return c.String()
}

// DisplayString is Display of a URL in text, "the source URL" for one
// that does not parse (where its secrets sit is unknown).
func DisplayString(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the source URL"
	}
	return Display(u)
}
