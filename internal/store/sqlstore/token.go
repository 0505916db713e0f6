package sqlstore

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// pageToken is the cursor of ListJobs: the last job of a page, and the
// account and filter it was minted for, so that a token is only valid for
// the listing that produced it.
type pageToken struct {
	Account string `json:"a"`
	Status  string `json:"s,omitempty"`
	Created int64  `json:"c"` // Unix microseconds
	ID      string `json:"i"`
}

func (t pageToken) created() time.Time { return time.UnixMicro(t.Created).UTC() }

func encodePageToken(accountID string, status job.Status, created time.Time, id string) string {
	b, _ := json.Marshal(pageToken{Account: accountID, Status: string(status), Created: created.UnixMicro(), ID: id}) // plain struct: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodePageToken returns the cursor, or ErrBadPageToken when the token is
// corrupt or was minted for another account or status filter.
func decodePageToken(token, accountID string, status job.Status) (pageToken, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return pageToken{}, store.ErrBadPageToken
	}
	var t pageToken
	if err := json.Unmarshal(b, &t); err != nil || t.ID == "" {
		return pageToken{}, store.ErrBadPageToken
	}
	if t.Account != accountID || t.Status != string(status) {
		return pageToken{}, store.ErrBadPageToken
	}
	return t, nil
}
