package store

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// RunLimitKey is the River job metadata key under which NoteRunLimit
// records an attempt's limit.
const RunLimitKey = "docjobs:run_limit"

// RunLimit is how long one attempt of a River job may run before River's
// rescuer may take it for stuck, as the process making the attempt counts
// it. River's rescuer runs on the one client that leads the queue and
// judges every running job by that client's own configuration (its
// RescueStuckJobsAfter and its worker's Timeout): a worker configured for
// longer files than the leader had its files rescued, and run a second
// time beside the first, while they ran.
type RunLimit struct {
	// Attempt and By name the attempt: its number and the client making
	// it (the last of the job's AttemptedBy). A limit noted by an earlier
	// attempt, or by another client for the same number (a snoozed
	// attempt gives its number back), is not this attempt's.
	Attempt int    `json:"attempt"`
	By      string `json:"by"`
	// Millis is the limit in milliseconds.
	Millis int64 `json:"ms"`
}

// NewRunLimit is the limit of rj's current attempt.
func NewRunLimit(rj *rivertype.JobRow, limit time.Duration) RunLimit {
	return RunLimit{Attempt: rj.Attempt, By: lastAttemptedBy(rj), Millis: limit.Milliseconds()}
}

// RunLimitOf returns the limit noted for rj's current attempt, or 0 when
// none is.
func RunLimitOf(rj *rivertype.JobRow) time.Duration {
	// River asks at every file job's start, and nearly none carries a
	// note (an attempt writes one only once it has run 30 s): skip the
	// parse of River's own metadata for them.
	if rj == nil || !bytes.Contains(rj.Metadata, []byte(RunLimitKey)) {
		return 0
	}
	var md map[string]json.RawMessage
	if json.Unmarshal(rj.Metadata, &md) != nil || md[RunLimitKey] == nil {
		return 0
	}
	var l RunLimit
	if json.Unmarshal(md[RunLimitKey], &l) != nil || l.Attempt != rj.Attempt || l.By == "" || l.By != lastAttemptedBy(rj) {
		return 0
	}
	return time.Duration(max(l.Millis, 0)) * time.Millisecond
}

func lastAttemptedBy(rj *rivertype.JobRow) string {
	if len(rj.AttemptedBy) == 0 {
		return ""
	}
	return rj.AttemptedBy[len(rj.AttemptedBy)-1]
}
