package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
)

// s3Upload is where an upload to an s3:// bucket goes, as s3blob's writer
// names it (bucket, and the key as escaped for S3). StoreUpload aborts a
// write by cancelling its context, and s3blob's transfer manager then tries
// to abort the multipart upload of a body past 16 MiB with that same
// cancelled context: the abort fails and S3 keeps the parts, unseen by any
// listing, until a lifecycle rule (if any) expires them. abort finishes the
// job with a live context. file:// writes leave nothing to abort.
type s3Upload struct {
	bucket, key *string
}

// capture is a WriterOptions.BeforeWrite that records the upload's target;
// other drivers offer no *transfermanager.UploadObjectInput and it records
// nothing.
func (u *s3Upload) capture(as func(any) bool) error {
	var in *transfermanager.UploadObjectInput
	if as(&in) {
		u.bucket, u.key = in.Bucket, in.Key
	}
	return nil
}

// abort aborts the multipart upload closeErr (the aborted writer's Close
// error) names, if any. It is a no-op for other storage and other errors.
//
// When the error names no upload (the cancel came while the upload was
// being created: the server made it, the client never read its id), the
// key's multipart uploads are listed and aborted: the key is the upload's
// own (a new id), so any upload under it is this one. One left so showed
// in a test's listing after a 413.
func (u *s3Upload) abort(ctx context.Context, bucket *blob.Bucket, closeErr error) error {
	if u.bucket == nil || closeErr == nil {
		return nil
	}
	var client *s3.Client
	if !bucket.As(&client) {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	var ids []string
	var failed transfermanager.MultipartUploadError
	if errors.As(closeErr, &failed) && failed.UploadID() != "" {
		ids = append(ids, failed.UploadID())
	} else {
		out, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: u.bucket, Prefix: u.key})
		if err != nil {
			return fmt.Errorf("list multipart uploads of an aborted upload: %w", err)
		}
		for _, up := range out.Uploads {
			if up.Key != nil && *up.Key == *u.key && up.UploadId != nil {
				ids = append(ids, *up.UploadId)
			}
		}
	}
	var errs []error
	for _, id := range ids {
		if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: u.bucket, Key: u.key, UploadId: &id,
		}); err != nil {
			errs = append(errs, fmt.Errorf("abort multipart upload %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
