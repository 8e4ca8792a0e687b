package objstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// EndpointEnv names the variables that move the S3 endpoint, as the AWS
// SDKs read them: the service's own first.
var EndpointEnv = []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}

// DefaultRegion is the region of a store whose region no setting names
// (S3-compatible stores accept any).
const DefaultRegion = "us-east-1"

// Options say which store to reach.
type Options struct {
	// Endpoint is an S3-compatible store's URL (MinIO, Ceph, R2, a test
	// server), addressed path-style; "" is AWS's, or the endpoint of
	// AWS_ENDPOINT_URL_S3 (then also path-style).
	Endpoint string
	// Region is the bucket's region; "" takes the standard chain's
	// (AWS_REGION, the shared config), else DefaultRegion.
	Region string
	// HTTPClient, when set, sends the requests (its answers bounded
	// as every answer is: see maxAnswer).
	HTTPClient *http.Client
	// Attempts bounds the tries of one request (0: 6); throttling and
	// server errors are retried with backoff.
	Attempts int
	// MaxBackoff bounds the wait before a retry (0: 20s).
	MaxBackoff time.Duration
	// StallTimeout cuts an answer from which nothing arrived for this
	// long (0: 2 minutes).
	StallTimeout time.Duration
}

// Store reads and writes objects. Credentials come from the AWS SDK's
// standard chain (the environment, the shared files, web identity, the
// container or instance role); they never appear in an error.
type Store struct {
	c        *s3.Client
	endpoint string // for messages: "" is AWS
}

// ErrNotFound is returned for an object that does not exist.
var ErrNotFound = errors.New("no such object")

// Open prepares a client; nothing is sent until the first request.
func Open(ctx context.Context, o Options) (*Store, error) {
	endpoint, _ := ResolveEndpoint(o.Endpoint)
	if endpoint != "" {
		if err := CheckEndpoint(endpoint); err != nil {
			return nil, err
		}
	}
	attempts := o.Attempts
	if attempts <= 0 {
		attempts = 6
	}
	backoff := o.MaxBackoff
	if backoff <= 0 {
		backoff = 20 * time.Second
	}
	opts := []func(*config.LoadOptions) error{
		// Stores that speak S3 do not all take the SDK's trailing
		// checksums; a checksum is sent where the API requires one.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = attempts
				so.MaxBackoff = backoff
				so.Backoff = retry.NewExponentialJitterBackoff(backoff)
				so.RateLimiter = ratelimit.None // every request may retry: a long run meets many blips
				// S3 says SlowDown with a 503; stores that speak its API
				// may say 429.
				so.Retryables = append(so.Retryables, retry.RetryableHTTPStatusCode{Codes: map[int]struct{}{http.StatusTooManyRequests: {}}})
			})
		}),
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.HTTPClient != nil {
		opts = append(opts, config.WithHTTPClient(o.HTTPClient))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("object storage: reading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	cfg.HTTPClient = boundedClient(cfg.HTTPClient, cmp.Or(o.StallTimeout, stallTimeout))
	if endpoint == "" && cfg.BaseEndpoint != nil {
		endpoint = *cfg.BaseEndpoint // the shared config's endpoint_url
	}
	c := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
			so.UsePathStyle = true
		}
	})
	return &Store{c: c, endpoint: endpoint}, nil
}

// ResolveEndpoint returns the endpoint that flag (--s3-endpoint) or the
// environment (EndpointEnv, in order) chooses, and which of them chose it;
// "" for neither (AWS, or a shared config's endpoint_url, which Open
// reads).
func ResolveEndpoint(flag string) (endpoint, from string) {
	if flag != "" {
		return flag, "--s3-endpoint"
	}
	for _, name := range EndpointEnv {
		if v := os.Getenv(name); v != "" {
			return v, name
		}
	}
	return "", ""
}

// CheckEndpoint accepts an http(s) URL with a host and nothing that could
// carry a secret or a second meaning (user info, a query, a fragment).
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("S3 endpoint %q: want an http:// or https:// URL with a host", safe(RedactURL(s)))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("S3 endpoint %s: no user info, query or fragment (credentials come from the environment)", safe(RedactURL(s)))
	}
	return nil
}

// RedactURL drops a URL's user info (a password in an endpoint).
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return s
}

// Endpoint returns where requests go, for messages ("" is AWS).
func (s *Store) Endpoint() string { return s.endpoint }

// opTimeout bounds one request with its retries.
const opTimeout = 5 * time.Minute

func (s *Store) wrap(op string, u URL, key string, err error) error {
	if err == nil {
		return nil
	}
	if isNotFound(err) {
		return fmt.Errorf("%s %s: %w", op, u.Of(key), ErrNotFound)
	}
	where := ""
	if s.endpoint != "" {
		where = " at " + s.endpoint
	}
	return fmt.Errorf("%s %s%s: %w", op, u.Of(key), where, err)
}

func isNotFound(err error) bool {
	var nk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nk) || errors.As(err, &nf) {
		return true
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		var ae smithy.APIError
		return !errors.As(err, &ae) || ae.ErrorCode() != "NoSuchBucket"
	}
	return false
}

// Put writes a whole object.
func (s *Store) Put(ctx context.Context, u URL, key string, body []byte, meta map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(u.Bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String(contentType(key)),
		Metadata:      meta,
	})
	return s.wrap("writing", u, key, err)
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".jsonl"):
		return "application/x-ndjson"
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	}
	return "application/octet-stream"
}

// Get opens an object for reading, with its user metadata. The caller
// closes it. size, when not negative, is the object's size as listed: a
// body that runs past it is cut with an error (a store's answer is
// someone else's, and an object's body can be endless).
func (s *Store) Get(ctx context.Context, u URL, key string, size int64) (io.ReadCloser, map[string]string, error) {
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, nil, s.wrap("reading", u, key, err)
	}
	if size < 0 {
		return out.Body, out.Metadata, nil
	}
	return &sized{rc: out.Body, left: size, name: u.Of(key), size: size}, out.Metadata, nil
}

// sized reads an object no further than its listed size.
type sized struct {
	rc   io.ReadCloser
	left int64
	name string
	size int64
}

func (r *sized) Read(p []byte) (int, error) {
	if r.left <= 0 {
		var one [1]byte
		if n, _ := r.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("reading %s: larger than the %d bytes listed (changed while read?)", r.name, r.size)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.rc.Read(p)
	r.left -= int64(n)
	if err == io.EOF && r.left > 0 {
		err = fmt.Errorf("reading %s: %d bytes short of the %d listed: %w", r.name, r.left, r.size, io.ErrUnexpectedEOF)
	}
	return n, err
}

func (r *sized) Close() error { return r.rc.Close() }

// Head returns an object's user metadata.
func (s *Store) Head(ctx context.Context, u URL, key string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	out, err := s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, s.wrap("reading", u, key, err)
	}
	return out.Metadata, nil
}

// Object is a listed object.
type Object struct {
	Key  string
	Size int64
}

// MaxObjects bounds a listing: a prefix holding more is refused rather
// than read without end.
const MaxObjects = 1_000_000

// maxPages bounds the pages of a listing: S3 gives up to 1,000 objects a
// page, so MaxObjects fill a thousand; a store that hands out a few at a
// time, or a fresh token with every page, is given up on.
const maxPages = 2 * MaxObjects / 1000

// listTimeout bounds one page of a listing with its retries.
const listTimeout = 2 * time.Minute

// List returns the objects under u's prefix, in the order listed. A
// store that answers without end (a page that never closes, a token
// given twice, an endless run of pages, a page that says there is more
// but holds nothing) is given up on with an error that says so.
func (s *Store) List(ctx context.Context, u URL) ([]Object, error) {
	var out []Object
	var token *string
	seen := map[string]bool{}
	for pages := 1; ; pages++ {
		if pages > maxPages {
			return nil, fmt.Errorf("listing %s: over %d pages without an end; the store is not answering as S3 does", u, maxPages)
		}
		pctx, cancel := context.WithTimeout(ctx, listTimeout)
		page, err := s.c.ListObjectsV2(pctx, &s3.ListObjectsV2Input{Bucket: aws.String(u.Bucket), Prefix: aws.String(u.Prefix), ContinuationToken: token})
		cancel()
		if err != nil {
			return nil, s.wrap("listing", u, u.Prefix, err)
		}
		if len(out)+len(page.Contents) > MaxObjects {
			return nil, fmt.Errorf("listing %s: more than %d objects; give a prefix of one run", u, MaxObjects)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)})
		}
		next := aws.ToString(page.NextContinuationToken)
		if !aws.ToBool(page.IsTruncated) {
			return out, nil
		}
		switch {
		case next == "":
			return nil, fmt.Errorf("listing %s: the store says there is more but gives no token to ask for it", u)
		case seen[next]:
			return nil, fmt.Errorf("listing %s: the store gave the same continuation token twice (a listing without end)", u)
		case len(page.Contents) == 0:
			return nil, fmt.Errorf("listing %s: the store says there is more but gave a page with nothing in it", u)
		case len(next) > 4<<10:
			return nil, fmt.Errorf("listing %s: a continuation token of %d bytes", u, len(next))
		}
		seen[next] = true
		token = aws.String(next)
	}
}

// Delete removes objects (missing ones are no error).
func (s *Store) Delete(ctx context.Context, u URL, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		ids := make([]types.ObjectIdentifier, n)
		for i, k := range keys[:n] {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		dctx, cancel := context.WithTimeout(ctx, opTimeout)
		out, err := s.c.DeleteObjects(dctx, &s3.DeleteObjectsInput{Bucket: aws.String(u.Bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		cancel()
		if err != nil {
			return s.wrap("deleting under", u, u.Prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("deleting %s: %s: %s", u.Of(aws.ToString(e.Key)), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		keys = keys[n:]
	}
	return nil
}

// uploadPart is the size of the pieces Upload sends: S3 takes at least
// 5 MiB per piece but the last, and at most 10,000 pieces (80 GB here).
const uploadPart = 8 << 20

// Upload writes an object from a stream of unknown length: one request
// when it is short, a multipart upload (aborted on failure) when not.
func (s *Store) Upload(ctx context.Context, u URL, key string, r io.Reader, meta map[string]string) error {
	buf := make([]byte, uploadPart)
	n, err := io.ReadFull(r, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s.Put(ctx, u, key, buf[:n], meta)
	}
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	created, err := s.c.CreateMultipartUpload(cctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(u.Bucket), Key: aws.String(key), Metadata: meta, ContentType: aws.String(contentType(key)),
	})
	cancel()
	if err != nil {
		return s.wrap("writing", u, key, err)
	}
	id := created.UploadId
	abort := func(err error) error {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		s.c.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: aws.String(u.Bucket), Key: aws.String(key), UploadId: id})
		return err
	}
	var parts []types.CompletedPart
	for num := int32(1); ; num++ {
		if num > 10_000 {
			return abort(fmt.Errorf("writing %s: over 10,000 pieces of %d MiB", u.Of(key), uploadPart>>20))
		}
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		out, perr := s.c.UploadPart(pctx, &s3.UploadPartInput{
			Bucket: aws.String(u.Bucket), Key: aws.String(key), UploadId: id, PartNumber: aws.Int32(num),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		cancel()
		if perr != nil {
			return abort(s.wrap("writing", u, key, perr))
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
		if err != nil { // the piece just sent was the last
			break
		}
		n, err = io.ReadFull(r, buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return abort(err)
		}
	}
	cctx, cancel = context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err = s.c.CompleteMultipartUpload(cctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(u.Bucket), Key: aws.String(key), UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		return abort(s.wrap("writing", u, key, err))
	}
	return nil
}
