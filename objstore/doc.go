// Package objstore reads and writes programs in S3-compatible object
// stores, addressed as s3://bucket/key.
//
// Reads go through package httprange, the same reader (block cache,
// read-ahead, retries, pinning, limits on every wait, redaction) that
// serves http:// and https:// inputs: Store.Open gives httprange a client
// whose transport signs each request with AWS Signature Version 4, using
// the credentials and region of the SDK's default chain (aws-sdk-go-v2:
// the environment, the shared config and credentials files with
// AWS_PROFILE, web identity, container and instance metadata). The object
// is pinned to the version the first response shows: by its ETag
// (httprange's If-Match) and, in a versioned bucket, by its version id.
//
// Writes use the SDK's S3 client: Upload streams an object as a multipart
// upload that becomes visible only when it is completed (an aborted or
// killed writer leaves no object at the key), and Assemble builds an
// object from literal bytes and server-side copies of ranges of another
// object (UploadPartCopy pinned with x-amz-copy-source-if-match), so that
// a re-bake inside the store moves the new head and not the engines.
//
// Endpoints: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the shared
// config's endpoint_url name an S3-compatible store, addressed path-style
// (http://host/bucket/key); without one, AWS S3 is addressed
// virtual-hosted (https://bucket.s3.REGION.amazonaws.com/key). A bucket's
// region is the configured one (AWS_REGION, the profile's region), else
// the one the store names in its x-amz-bucket-region header, else
// us-east-1.
//
// No message of this package holds a credential: errors name the
// location as s3://bucket/key, and the SDK's errors keep the operation,
// status and the store's error code.
package objstore
