package api

import (
	"context"
	"errors"

	"google.golang.org/protobuf/types/known/timestamppb"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// ListFiles returns a page of the calling account's uploads, newest first,
// paged as ListJobs is: pageSize 50 by default and at most 100, a page
// ending early once its files would pass Config.MaxListPageBytes, and a
// token good only for this listing of this account. A job's stored copies
// are not uploads and are not listed: they go with their job. It is how
// an account at its upload quota finds what to delete.
func (s *Service) ListFiles(ctx context.Context, req *docjobsv1.ListFilesRequest) (*docjobsv1.ListFilesResponse, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	// An upload's record is small (its name is at most 255 bytes), so 100
	// of them stay far below the bound; it holds all the same, sized as
	// ListJobs sizes a job, for records a future field or an operator's
	// long DOCJOBS_PUBLIC_URL might make larger.
	converted := map[string]*docjobsv1.UploadedFile{}
	var buf []byte
	page, err := s.store.ListUploads(ctx, store.UploadListParams{
		AccountID: acct, PageSize: size, PageToken: req.GetPageToken(),
		MaxBytes: s.cfg.MaxListPageBytes,
		Size: func(f job.File) int {
			c := s.toUploadedFile(f)
			converted[f.ID] = c
			return listItemSize(&buf, c)
		},
	})
	if errors.Is(err, store.ErrBadPageToken) {
		return nil, invalid("pageToken", "invalid")
	}
	if err != nil {
		return nil, s.internal(ctx, "ListFiles", err)
	}
	out := &docjobsv1.ListFilesResponse{Files: make([]*docjobsv1.UploadedFile, len(page.Files)), NextPageToken: page.NextPageToken}
	for i, f := range page.Files {
		if out.Files[i] = converted[f.ID]; out.Files[i] == nil {
			out.Files[i] = s.toUploadedFile(f)
		}
	}
	return out, nil
}

// toUploadedFile is an upload as ListFiles lists it: what the upload
// answered (url, name, size) with its id, content type and time.
func (s *Service) toUploadedFile(f job.File) *docjobsv1.UploadedFile {
	return &docjobsv1.UploadedFile{
		Id:          f.ID,
		Url:         FileURL(s.cfg.PublicURL, f.ID),
		Name:        f.Name,
		SizeBytes:   f.Size,
		ContentType: f.ContentType,
		Created:     timestamppb.New(f.Created),
	}
}
