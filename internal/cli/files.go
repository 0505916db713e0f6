package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func filesCommand(env *environment) *cobra.Command {
	var flags clientFlags
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "files",
		Short: "Client: list the account's uploads, newest first; files rm deletes them",
		Long: `files lists the files the account uploaded (GET /v1/files), following the
service's pages up to --limit, as a table: id, size in bytes, created, name.
Uploads count against the account's upload quota until deleted: files rm ID
deletes one. A job's stored copies are not uploads: they go with their job.
The service is --server or DOCJOBS_URL; the key DOCJOBS_API_KEY (or DOCJOBS_API_KEY_FILE).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return fmt.Errorf("%w: --limit must be positive", errUsage)
			}
			cfg, err := env.clientConfig(flags)
			if err != nil {
				return err
			}
			c := newClient(cfg)
			c.notes = env.stderr
			files, more, err := listFiles(cmd.Context(), c, limit)
			if err != nil {
				return err
			}
			return printListing(env, "uploads", files, more, limit, asJSON, func() error { return printFileTable(env, files) })
		},
	}
	flags.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many uploads")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the uploads as a JSON array of the service's file objects")
	cmd.AddCommand(filesRmCommand(env))
	return cmd
}

func filesRmCommand(env *environment) *cobra.Command {
	var flags clientFlags
	cmd := &cobra.Command{
		Use:   "rm ID|URL...",
		Short: "Client: delete uploads of the account",
		Long: `files rm deletes each upload named (DELETE /v1/files/{id}), by its id or by the
url the upload answered; jobs that read it keep their own copies. It goes on
past one it cannot delete, names it, and exits 1 at the end.
The service is --server or DOCJOBS_URL; the key DOCJOBS_API_KEY (or DOCJOBS_API_KEY_FILE).`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := env.clientConfig(flags)
			if err != nil {
				return err
			}
			// Every argument is checked before any upload is deleted: a
			// typo further on stops the command with nothing done, rather
			// than after some deletions and with the failures so far unsaid.
			ids := make([]string, len(args))
			for i, arg := range args {
				if ids[i] = uploadID(arg); ids[i] == "" {
					return fmt.Errorf("%w: %q names no upload: give its id or its url; nothing was deleted", errUsage, arg)
				}
			}
			c := newClient(cfg)
			c.notes = env.stderr
			var failed []error
			for _, id := range ids {
				resp, err := c.do(cmd.Context(), http.MethodDelete, "/v1/files/"+url.PathEscape(id), nil, "", -1)
				if err != nil {
					if cmd.Context().Err() != nil {
						return err
					}
					failed = append(failed, fmt.Errorf("%s: %w", id, err))
					continue
				}
				resp.Body.Close()
				fmt.Fprintf(env.stderr, "deleted the upload %s\n", id)
			}
			switch {
			case len(failed) == 1 && len(args) == 1:
				return failed[0]
			case len(failed) > 0:
				for _, err := range failed[:len(failed)-1] {
					fmt.Fprintln(env.stderr, "docjobs:", err)
				}
				return fmt.Errorf("%w (%d of %d uploads not deleted)", failed[len(failed)-1], len(failed), len(args))
			}
			return nil
		},
	}
	flags.register(cmd)
	return cmd
}

// uploadID is the id an argument of files rm names: the last segment of
// an upload's url (.../v1/files/{id}), or the argument itself.
func uploadID(arg string) string {
	arg = strings.TrimSpace(arg)
	if u, err := url.Parse(arg); err == nil && u.Scheme != "" {
		i := strings.LastIndex(u.Path, filesPath)
		if i < 0 {
			return ""
		}
		arg = u.Path[i+len(filesPath):]
	}
	if arg == "" || strings.Contains(arg, "/") {
		return ""
	}
	return arg
}

// filesPath is the path of the service's stored files, {id} after it.
const filesPath = "/v1/files/"

// listedFile is an upload of a list answer: the columns of the table, and
// the object as the service sent it for --json.
type listedFile struct {
	ID      string      `json:"id"`
	Name    string      `json:"name"`
	Size    json.Number `json:"sizeBytes"` // an int64: a JSON string
	Created string      `json:"created"`
	raw     json.RawMessage
}

func (f *listedFile) UnmarshalJSON(b []byte) error {
	type fields listedFile
	if err := json.Unmarshal(b, (*fields)(f)); err != nil {
		return err
	}
	f.raw = append(json.RawMessage(nil), b...)
	return nil
}

func (f listedFile) MarshalJSON() ([]byte, error) { return f.raw, nil }

// listFiles reads pages of GET /v1/files until limit uploads or the last
// page, as listJobs reads jobs. more reports that the service has more
// than limit.
func listFiles(ctx context.Context, c *client, limit int) (files []listedFile, more bool, err error) {
	return listPages[listedFile](ctx, c, "/v1/files", "files", url.Values{}, limit)
}

func printFileTable(env *environment, files []listedFile) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSIZE\tCREATED\tNAME")
	for _, f := range files {
		// Names are cleaned of control characters at upload; an older
		// record's, or any cell of a faulty service, would break the
		// table's rows or drive the terminal.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", tableCell(f.ID), tableCell(f.Size.String()), tableCell(f.Created), tableCell(f.Name))
	}
	return tw.Flush()
}
