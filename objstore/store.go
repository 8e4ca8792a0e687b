package objstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// EndpointEnv names the variables that move the S3 endpoint, as the AWS
// tools read them: the service's own first.
var EndpointEnv = []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}

// DefaultRegion is the region of a store whose region no setting names
// (S3-compatible stores accept any).
const DefaultRegion = "us-east-1"

// awsEndpoint is AWS S3's own host.
const awsEndpoint = "s3.amazonaws.com"

// Options say which store to reach.
type Options struct {
	// Endpoint is an S3-compatible store's URL (MinIO, Ceph, R2, a test
	// server), addressed path-style; "" is AWS's, or the endpoint of
	// AWS_ENDPOINT_URL_S3 or the shared config's endpoint_url (then also
	// path-style).
	Endpoint string
	// Region is the bucket's region; "" takes AWS_REGION,
	// AWS_DEFAULT_REGION or the shared config's, else DefaultRegion.
	Region string
	// Transport, when set, sends the requests (its answers bounded as
	// every answer is: see maxAnswer).
	Transport http.RoundTripper
	// Attempts bounds the tries of one request (0: 6); throttling and
	// server errors are retried with backoff.
	Attempts int
	// StallTimeout cuts an answer from which nothing arrived for this
	// long (0: 2 minutes).
	StallTimeout time.Duration
}

// Store reads and writes objects. Credentials come from the standard
// AWS chain (the environment, the shared credentials and config files
// with their SSO and credential_process profiles, web identity as IRSA
// gives it, the container or instance role); they never appear in an
// error.
type Store struct {
	c        *minio.Client
	core     minio.Core
	endpoint string // for messages: "" is AWS
}

// ErrNotFound is returned for an object that does not exist.
var ErrNotFound = errors.New("no such object")

// Open prepares a client; nothing is sent until the first request.
func Open(ctx context.Context, o Options) (*Store, error) {
	endpoint, _ := ResolveEndpoint(o.Endpoint)
	shared := readSharedConfig()
	if endpoint == "" {
		endpoint = shared.endpoint // the shared config's endpoint_url
	}
	if endpoint != "" {
		if err := CheckEndpoint(endpoint); err != nil {
			return nil, err
		}
	}
	region := cmp.Or(o.Region, os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"), shared.region, DefaultRegion)
	base, err := baseTransport(o.Transport)
	if err != nil {
		return nil, err
	}
	mo := &minio.Options{
		Creds:        credentialChain(),
		Secure:       true,
		Region:       region,
		Transport:    newTransport(base, cmp.Or(o.StallTimeout, stallTimeout)),
		BucketLookup: minio.BucketLookupAuto,
		MaxRetries:   cmp.Or(o.Attempts, 6),
	}
	host := awsEndpoint
	if endpoint != "" {
		u, _ := url.Parse(endpoint) // checked above
		host, mo.Secure, mo.BucketLookup = u.Host, u.Scheme == "https", minio.BucketLookupPath
	}
	c, err := minio.New(host, mo)
	if err != nil {
		return nil, fmt.Errorf("object storage: %w", err)
	}
	return &Store{c: c, core: minio.Core{Client: c}, endpoint: endpoint}, nil
}

// credentialChain is the standard AWS chain: the environment, the shared
// credentials file (its profile's SSO or credential_process as well),
// then web identity, the container's or the instance's role.
func credentialChain() *credentials.Credentials {
	return credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{},
		&credentials.IAM{},
	})
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
// carry a secret or a second meaning (user info, a path, a query, a
// fragment).
func CheckEndpoint(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("S3 endpoint %q: want an http:// or https:// URL with a host", safe(RedactURL(s)))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("S3 endpoint %s: no user info, query or fragment (credentials come from the environment)", safe(RedactURL(s)))
	}
	if strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("S3 endpoint %s: no path (the bucket and prefix come from the s3:// location)", safe(RedactURL(s)))
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
	if e := minio.ToErrorResponse(err); e.Code != "" {
		// The store's own words: its code says most (AccessDenied,
		// SlowDown), its message the rest.
		return fmt.Errorf("%s %s%s: %s: %s (HTTP %d)", op, u.Of(key), where, safe(e.Code), safe(e.Message), e.StatusCode)
	}
	return fmt.Errorf("%s %s%s: %w", op, u.Of(key), where, err)
}

func isNotFound(err error) bool {
	e := minio.ToErrorResponse(err)
	switch e.Code {
	case minio.NoSuchKey, "NotFound":
		return true
	case minio.NoSuchBucket:
		return false
	}
	return e.StatusCode == http.StatusNotFound
}

// Put writes a whole object.
func (s *Store) Put(ctx context.Context, u URL, key string, body []byte, meta map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := s.core.PutObject(ctx, u.Bucket, key, bytes.NewReader(body), int64(len(body)), "", sha256Hex(body), minio.PutObjectOptions{
		ContentType:          contentType(key),
		UserMetadata:         meta,
		DisableContentSha256: true, // signed with the hash given, not streamed in signed chunks
	})
	return s.wrap("writing", u, key, err)
}

// sha256Hex is the hash a request's signature covers. Giving it (rather
// than letting the client sign its body in chunks as it streams over
// plain HTTP) sends the body as it is: stores that speak S3 do not all
// take the chunked form.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
// body that runs past it, or ends short of it, is an error (a store's
// answer is someone else's, and an object's body can be endless); the
// transport holds the bound (see boundedTransport).
func (s *Store) Get(ctx context.Context, u URL, key string, size int64) (io.ReadCloser, map[string]string, error) {
	if size >= 0 {
		ctx = withObjectSize(ctx, size)
	}
	body, info, _, err := s.core.GetObject(ctx, u.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, nil, s.wrap("reading", u, key, err)
	}
	return body, info.UserMetadata, nil
}

// Head returns an object's user metadata.
func (s *Store) Head(ctx context.Context, u URL, key string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	info, err := s.c.StatObject(ctx, u.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return nil, s.wrap("reading", u, key, err)
	}
	return info.UserMetadata, nil
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

// A store that says there is more gives a full page, 1,000 objects, as S3
// and the stores that speak it do; a run of short pages that each say
// there is more is a listing that will not end.
const (
	shortPage     = 100
	maxShortPages = 10
)

// listTimeout bounds one page of a listing with its retries.
const listTimeout = 2 * time.Minute

// List returns the objects under u's prefix, in the order listed. A
// store that answers without end (a page that never closes, a token
// given twice, an endless run of pages or of short ones, a page that says
// there is more but holds nothing) is given up on with an error that says
// so.
func (s *Store) List(ctx context.Context, u URL) ([]Object, error) {
	var out []Object
	token := ""
	seen := map[string]bool{}
	short := 0
	for pages := 1; ; pages++ {
		if pages > maxPages {
			return nil, fmt.Errorf("listing %s: over %d pages without an end; the store is not answering as S3 does", u, maxPages)
		}
		page, err := s.listPage(ctx, u, token)
		if err != nil {
			return nil, s.wrap("listing", u, u.Prefix, err)
		}
		if len(out)+len(page.Contents) > MaxObjects {
			return nil, fmt.Errorf("listing %s: more than %d objects; give a prefix of one run", u, MaxObjects)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: o.Key, Size: o.Size})
		}
		next := page.NextContinuationToken
		if !page.IsTruncated {
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
		if short = short + 1; len(page.Contents) >= shortPage {
			short = 0
		}
		if short >= maxShortPages {
			return nil, fmt.Errorf("listing %s: %d pages in a row of fewer than %d objects, each saying there is more (a store gives full pages); the store is not answering as S3 does", u, short, shortPage)
		}
		seen[next] = true
		token = next
	}
}

// listPage asks for one page of a listing, within listTimeout and as
// long as ctx lasts. (The client's one-page call takes no context: a
// page abandoned here ends by the transport's own bounds.)
func (s *Store) listPage(ctx context.Context, u URL, token string) (minio.ListBucketV2Result, error) {
	type answer struct {
		page minio.ListBucketV2Result
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		page, err := s.core.ListObjectsV2(u.Bucket, u.Prefix, "", token, "", 1000)
		ch <- answer{page, err}
	}()
	timer := time.NewTimer(listTimeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a.page, a.err
	case <-ctx.Done():
		return minio.ListBucketV2Result{}, ctx.Err()
	case <-timer.C:
		return minio.ListBucketV2Result{}, fmt.Errorf("no page within %v", listTimeout)
	}
}

// Delete removes objects (missing ones are no error).
func (s *Store) Delete(ctx context.Context, u URL, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	objs := make(chan minio.ObjectInfo)
	go func() {
		defer close(objs)
		for _, k := range keys {
			select {
			case objs <- minio.ObjectInfo{Key: k}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var first error
	for e := range s.c.RemoveObjects(ctx, u.Bucket, objs, minio.RemoveObjectsOptions{}) {
		if first == nil && e.Err != nil && !isNotFound(e.Err) {
			first = fmt.Errorf("deleting %s: %w", u.Of(e.ObjectName), e.Err)
		}
	}
	if first == nil && ctx.Err() != nil {
		return s.wrap("deleting under", u, u.Prefix, ctx.Err())
	}
	return first
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
	opts := minio.PutObjectOptions{ContentType: contentType(key), UserMetadata: meta}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	id, err := s.core.NewMultipartUpload(cctx, u.Bucket, key, opts)
	cancel()
	if err != nil {
		return s.wrap("writing", u, key, err)
	}
	abort := func(err error) error {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		s.core.AbortMultipartUpload(actx, u.Bucket, key, id)
		return err
	}
	var parts []minio.CompletePart
	for num := 1; ; num++ {
		if num > 10_000 {
			return abort(fmt.Errorf("writing %s: over 10,000 pieces of %d MiB", u.Of(key), uploadPart>>20))
		}
		pctx, cancel := context.WithTimeout(ctx, opTimeout)
		part, perr := s.core.PutObjectPart(pctx, u.Bucket, key, id, num, bytes.NewReader(buf[:n]), int64(n), minio.PutObjectPartOptions{
			Sha256Hex: sha256Hex(buf[:n]), DisableContentSha256: true,
		})
		cancel()
		if perr != nil {
			return abort(s.wrap("writing", u, key, perr))
		}
		parts = append(parts, minio.CompletePart{PartNumber: num, ETag: part.ETag})
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
	if _, err := s.core.CompleteMultipartUpload(cctx, u.Bucket, key, id, parts, opts); err != nil {
		return abort(s.wrap("writing", u, key, err))
	}
	return nil
}
