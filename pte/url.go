package pte

import (
	"context"
	"errors"
	"fmt"

	"github.com/ptekit/ptekit/httprange"
	"github.com/ptekit/ptekit/objstore"
)

// OpenURLOptions tunes OpenURL. A nil *OpenURLOptions, like the zero
// value, gives the defaults of both layers.
type OpenURLOptions struct {
	// OpenOptions tunes how the program is read, as for OpenWith.
	OpenOptions
	// HTTP tunes the transport: credentials (Header), cache, retries,
	// redirects.
	HTTP httprange.Options
}

// OpenURL opens the program at an http:// or https:// URL, or at an
// s3://bucket/key location (package objstore: the AWS SDK's credential
// chain, region and endpoint, every request signed), and reads it as
// Open reads a file, with range requests (see package httprange): opening
// and listing a program of any size takes a few requests and a few KiB,
// and payloads are fetched only when read. ctx governs the File's whole
// life, every later payload read included. The caller must Close the File,
// which closes the transport; File.ReaderAt returns the *httprange.Reader
// (its Stats count the requests).
//
// Reads are pinned to the version of the first response only when the
// server gives a strong validator (httprange.Reader.Pinned); a caller that
// writes what it reads (a re-bake) should set HTTP.RequirePinned, so that
// such a server is refused rather than risking a mix of two versions.
//
// Transport failures are *httprange.Error values (errors.As); a damaged
// program is a *FormatError as from Open. Errors name the URL without its
// user information and query, which may carry credentials.
func OpenURL(ctx context.Context, rawURL string, opts *OpenURLOptions) (*File, error) {
	var o OpenURLOptions
	if opts != nil {
		o = *opts
	}
	r, err := objstore.OpenURL(ctx, rawURL, &o.HTTP)
	if err != nil {
		return nil, err
	}
	f, err := NewFileWith(r, r.Size(), &o.OpenOptions)
	if err != nil {
		r.Close()
		if _, ok := errors.AsType[*httprange.Error](err); ok {
			return nil, err // it names the URL already
		}
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	f.closer = r
	return f, nil
}
