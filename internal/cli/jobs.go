package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// maxPageSize is the most jobs the service lists per page (ListJobsRequest).
const maxPageSize = 100

func jobsCommand(env *environment) *cobra.Command {
	var flags clientFlags
	var status string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "Client: list the account's jobs, newest first",
		Long: `jobs lists the jobs of the account the API key belongs to (GET /v1/jobs), following
the service's pages up to --limit, as a table: id, status, created, title.
The service is --server or DOCJOBS_URL; the key DOCJOBS_API_KEY (or DOCJOBS_API_KEY_FILE).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return fmt.Errorf("%w: --limit must be positive", errUsage)
			}
			if s := jobStatusName(status); s != "" && (docjobsv1.JobStatus_value[s] == 0) {
				return fmt.Errorf("%w: --status %s: want NEW, RUNNING, COMPLETE, FAILED or CANCELLED", errUsage, status)
			}
			cfg, err := env.clientConfig(flags)
			if err != nil {
				return err
			}
			c := newClient(cfg)
			c.notes = env.stderr
			jobs, more, err := listJobs(cmd.Context(), c, jobStatusName(status), limit)
			if err != nil {
				return err
			}
			return printListing(env, "jobs", jobs, more, limit, asJSON, func() error { return printJobTable(env, jobs) })
		},
	}
	flags.register(cmd)
	cmd.Flags().StringVar(&status, "status", "", "only jobs in this status: NEW, RUNNING, COMPLETE, FAILED or CANCELLED")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many jobs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the jobs as a JSON array of the service's job objects")
	return cmd
}

// listedJob is a job of a list answer: the columns of the table, and the
// object as the service sent it for --json.
type listedJob struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Created string `json:"created"`
	Title   string `json:"title"`
	raw     json.RawMessage
}

func (j *listedJob) UnmarshalJSON(b []byte) error {
	type fields listedJob
	if err := json.Unmarshal(b, (*fields)(j)); err != nil {
		return err
	}
	j.raw = append(json.RawMessage(nil), b...)
	return nil
}

func (j listedJob) MarshalJSON() ([]byte, error) { return j.raw, nil }

// listJobs reads pages of GET /v1/jobs until limit jobs or the last page.
// more reports that the service has more than limit.
func listJobs(ctx context.Context, c *client, status string, limit int) (jobs []listedJob, more bool, err error) {
	q := url.Values{}
	if status != "" {
		q.Set("statusEq", status)
	}
	return listPages[listedJob](ctx, c, "/v1/jobs", "jobs", q, limit)
}

// printListing prints what a listing command read: a note on stderr when
// the service has more than limit (of noun), then the items as a JSON
// array or as table prints them.
func printListing[T any](env *environment, noun string, items []T, more bool, limit int, asJSON bool, table func() error) error {
	if more {
		fmt.Fprintf(env.stderr, "docjobs: more %s than --limit %d: the newest %d are listed\n", noun, limit, len(items))
	}
	if !asJSON {
		return table()
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return err
	}
	return printIndented(env.stdout, raw)
}

// listPages reads pages of GET path (with query q) until limit items, read
// from the answer's field, or the last page. more reports that the
// service has more than limit.
func listPages[T any](ctx context.Context, c *client, path, field string, q url.Values, limit int) (items []T, more bool, err error) {
	items = []T{} // --json prints [] for none, not null
	token := ""
	for len(items) < limit {
		q.Set("pageSize", strconv.Itoa(min(limit-len(items), maxPageSize)))
		if token != "" {
			q.Set("pageToken", token)
		}
		var page map[string]json.RawMessage
		if err := c.getJSON(ctx, path+"?"+q.Encode(), &page, maxPageBytes); err != nil {
			return nil, false, err
		}
		// The contract leaves the list's shape open; docjobs always sends
		// the array, [] for none. Another shape is not "none".
		var got *[]T
		if raw, ok := page[field]; ok {
			if err := json.Unmarshal(raw, &got); err != nil {
				return nil, false, fmt.Errorf("GET %s: read answer: %w", path, err)
			}
		}
		if got == nil {
			return nil, false, fmt.Errorf("GET %s: the answer has no %q array", path, field)
		}
		var next string
		if raw, ok := page["nextPageToken"]; ok {
			if err := json.Unmarshal(raw, &next); err != nil {
				return nil, false, fmt.Errorf("GET %s: read answer: nextPageToken: %w", path, err)
			}
		}
		items = append(items, *got...)
		// A page without items ends the list too: a faulty service that
		// hands out tokens forever must not loop the client.
		if next == "" || next == token || len(*got) == 0 {
			more = false
			break
		}
		more = true
		token = next
	}
	return items[:min(len(items), limit)], more || len(items) > limit, nil
}

func printJobTable(env *environment, jobs []listedJob) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tCREATED\tTITLE")
	for _, j := range jobs {
		// Every cell is the service's text: a title is the caller's, and a
		// tab, a line break or ESC in any would break the table's rows or
		// drive the terminal.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", tableCell(j.ID), tableCell(strings.TrimPrefix(j.Status, "JOB_STATUS_")),
			tableCell(j.Created), tableCell(j.Title))
	}
	return tw.Flush()
}

// jobStatusName is the wire name of a status given with or without the
// JOB_STATUS_ prefix, in any case; "" stays "".
func jobStatusName(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	if s == "" || strings.HasPrefix(s, "JOB_STATUS_") {
		return s
	}
	return "JOB_STATUS_" + s
}

func getCommand(env *environment) *cobra.Command {
	var flags clientFlags
	var result bool
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Client: show a job, or with --result its result",
		Long: `get prints a job (GET /v1/jobs/{id}) as indented JSON, or with --result the job's
full result (GET /v1/jobs/{id}/result) as the service sends it, streamed.
The service is --server or DOCJOBS_URL; the key DOCJOBS_API_KEY (or DOCJOBS_API_KEY_FILE).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[0]) == "" {
				// `get "$ID"` with ID unset asked for /v1/jobs/ and
				// reported the service's "no route" (exit 1), as files rm
				// does not.
				return fmt.Errorf("%w: the job id is empty", errUsage)
			}
			cfg, err := env.clientConfig(flags)
			if err != nil {
				return err
			}
			c := newClient(cfg)
			c.notes = env.stderr
			path := "/v1/jobs/" + url.PathEscape(args[0])
			if result {
				return c.copyTo(cmd.Context(), path+"/result", env.stdout)
			}
			var j json.RawMessage
			if err := c.getJSON(cmd.Context(), path, &j, maxObjectBytes); err != nil {
				return err
			}
			return printIndented(env.stdout, []byte(c.shown(string(j))))
		},
	}
	flags.register(cmd)
	cmd.Flags().BoolVar(&result, "result", false, "print the job's result: recognized text and model answers per file")
	return cmd
}
