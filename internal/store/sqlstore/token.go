package sqlstore

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// pageToken is the cursor of ListJobs and ListUploads: the last job or
// upload of a page, and the listing, account and filter it was minted for,
// so that a token is only valid for the listing that produced it.
type pageToken struct {
	// Kind is the listing: "" for jobs (the tokens minted before uploads
	// were listed have none), uploadsList for uploads.
	Kind    string `json:"k,omitempty"`
	Account string `json:"a"`
	Status  string `json:"s,omitempty"`
	Created int64  `json:"c"` // Unix microseconds
	ID      string `json:"i"`
}

func (t pageToken) created() time.Time { return time.UnixMicro(t.Created).UTC() }

// The times a token's Created may hold: those of rows, which the service
// stamps with its clock. The token is plain base64 JSON, so any int64 can
// arrive; outside these years PostgreSQL refuses the timestamp (before
// 4713 BC: SQLSTATE 22008, which surfaced as an internal error) and
// SQLite's text timestamps no longer sort as times (a negative or
// five-digit year), so such a token is as corrupt as any other.
var (
	minTokenCreated = time.Date(1970, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxTokenCreated = time.Date(10000, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMicro() - 1
)

// The kinds of listing a page token is minted for.
const (
	jobsList    = ""
	uploadsList = "uploads"
)

func encodePageToken(kind, accountID string, status job.Status, created time.Time, id string) string {
	b, _ := json.Marshal(pageToken{Kind: kind, Account: accountID, Status: string(status), Created: created.UnixMicro(), ID: id}) // plain struct: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodePageToken returns the cursor, or ErrBadPageToken when the token is
// corrupt (a time no row can have included) or was minted for another
// listing, account or status filter.
func decodePageToken(token, kind, accountID string, status job.Status) (pageToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return pageToken{}, store.ErrBadPageToken
	}
	var t pageToken
	if err := json.Unmarshal(b, &t); err != nil || t.ID == "" {
		return pageToken{}, store.ErrBadPageToken
	}
	if t.Created < minTokenCreated || t.Created > maxTokenCreated {
		return pageToken{}, store.ErrBadPageToken
	}
	if t.Kind != kind || t.Account != accountID || t.Status != string(status) {
		return pageToken{}, store.ErrBadPageToken
	}
	return t, nil
}
