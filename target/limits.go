package target

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Bounds on what a network target reads from a response.
const (
	// DefaultMaxResponseBytes is the largest response body a network
	// target reads when the max_response_bytes option is not set. A chat
	// completion is rarely more than a few hundred KiB.
	DefaultMaxResponseBytes = 4 << 20
	// MaxErrorBodyBytes is how much of an error response's body (status
	// 400 and up) is read: enough for any message worth quoting. The rest
	// is dropped quietly, so the call still fails with the response's
	// status and is retried or not by it.
	MaxErrorBodyBytes = 64 << 10
	// maxResponseHeaderBytes bounds a response's headers (the transport's
	// own default is 10 MiB).
	maxResponseHeaderBytes = 1 << 20
	// maxLocation bounds how much of a redirect's Location an error quotes.
	maxLocation = 300
)

// OptMaxResponseBytes is the option bounding the size of a response body,
// in bytes (the CLI's --max-response-bytes). It only ever bounds, so a
// config file may set it.
const OptMaxResponseBytes = "max_response_bytes"

// Sentinel errors of responses a network target refuses to take.
var (
	// ErrResponseTooLarge means a response body was larger than the
	// target's limit; the call failed without reading the rest. It is
	// not retried: the same request would get the same reply.
	ErrResponseTooLarge = errors.New("response too large")
	// ErrRedirect means the API answered with a redirect, which a network
	// target never follows: the new request would carry the key to a
	// host the user did not name. It is not retried.
	ErrRedirect = errors.New("redirect not followed")
)

// ResponseTooLargeError is the error of a response body over the limit.
// It matches ErrResponseTooLarge.
type ResponseTooLargeError struct {
	// Limit is the limit in bytes that the body went over.
	Limit int64
}

// Error implements error.
func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the response body is larger than the limit of %s, so pikit stopped reading it; raise the limit with --max-response-bytes (or the target option %s)",
		formatBytes(e.Limit), OptMaxResponseBytes)
}

// Is makes the error match ErrResponseTooLarge.
func (e *ResponseTooLargeError) Is(err error) bool { return err == ErrResponseTooLarge }

// RedirectError is the error of an API that answered with a redirect
// (status 3xx). It matches ErrRedirect.
type RedirectError struct {
	// StatusCode is the response's status, 301 to 308.
	StatusCode int
	// Location is where the response pointed, "" when it named nowhere.
	// The target's error redacts it.
	Location string
}

// Error implements error.
func (e *RedirectError) Error() string {
	status := fmt.Sprint(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		status += " " + text
	}
	to := ""
	if e.Location != "" {
		to = " to " + e.Location
	}
	return fmt.Sprintf("the API answered %s%s: pikit does not follow redirects with your key; point --base-url at the final URL", status, to)
}

// Is makes the error match ErrRedirect.
func (e *RedirectError) Is(err error) bool { return err == ErrRedirect }

// formatBytes writes a size for a person: "4194304 bytes (4 MiB)".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// maxResponseBytesOption reads the max_response_bytes option, the default
// when it is not set.
func maxResponseBytesOption(opts Options) (int64, error) {
	n, err := positiveIntOption(opts, OptMaxResponseBytes)
	if err != nil || n == 0 {
		return DefaultMaxResponseBytes, err
	}
	return int64(n), nil
}

// newHTTPClient returns the client a network target sends with. It has no
// timeout of its own: the retry wrapper bounds each attempt through the
// context. Keeping a few idle connections per host serves a run's workers.
//
// It never follows a redirect: Go's client drops Authorization on a
// redirect to another host, but not x-api-key or other custom headers, so
// a redirect could hand the key to a host the user never named. A 3xx
// answer fails the call with a *RedirectError instead. It reads at most
// maxBody bytes of a response body (see limitBody).
func newHTTPClient(maxBody int64) *http.Client {
	var next http.RoundTripper = http.DefaultTransport
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.MaxIdleConnsPerHost = 32
		t.MaxResponseHeaderBytes = maxResponseHeaderBytes
		next = t
	}
	return &http.Client{
		Transport: &boundedTransport{next: next, maxBody: maxBody},
		// The transport already turns every 3xx into an error; this keeps
		// the client from following one should that ever change.
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return redirectError(req.Response, req.URL)
		},
	}
}

// boundedTransport is the round tripper of a network target: it refuses
// redirects and bounds what is read of each response body.
type boundedTransport struct {
	next    http.RoundTripper
	maxBody int64
}

// RoundTrip implements http.RoundTripper.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 300 && res.StatusCode < 400 {
		var to *url.URL
		if u, err := res.Location(); err == nil {
			to = u
		}
		err := redirectError(res, to)
		_ = res.Body.Close()
		return nil, err
	}
	limitBody(res, t.maxBody)
	return res, nil
}

// redirectError describes a redirect response that pointed at to (nil when
// it named nowhere).
func redirectError(res *http.Response, to *url.URL) error {
	e := &RedirectError{StatusCode: http.StatusFound}
	if res != nil {
		e.StatusCode = res.StatusCode
	}
	if to != nil {
		e.Location = to.String()
	}
	return e
}

// limitBody bounds what can be read of res's body. The body of an error
// response (status 400 and up) ends quietly after MaxErrorBodyBytes (or
// max, when that is smaller): it is only quoted. Any other body fails the
// read with a *ResponseTooLargeError once it goes over max bytes, at once
// when its Content-Length says it will.
func limitBody(res *http.Response, max int64) {
	if res.Body == nil || res.Body == http.NoBody {
		return
	}
	if res.StatusCode >= 400 {
		res.Body = &cappedBody{rc: res.Body, left: min(max, MaxErrorBodyBytes), quiet: true}
		return
	}
	b := &cappedBody{rc: res.Body, left: max, limit: max}
	if res.ContentLength > max {
		b.err = &ResponseTooLargeError{Limit: max}
	}
	res.Body = b
}

// cappedBody reads at most left more bytes of rc. Past them it reports
// io.EOF when quiet, else a *ResponseTooLargeError unless rc ends there.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
	quiet bool
	err   error // sticky: once over the limit, every read fails
}

// Read implements io.Reader.
func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		if b.quiet {
			return 0, io.EOF
		}
		// At the limit: the body is fine if it ends here.
		var one [1]byte
		n, err := io.ReadFull(b.rc, one[:])
		switch {
		case n > 0:
			b.err = &ResponseTooLargeError{Limit: b.limit}
			return 0, b.err
		case errors.Is(err, io.EOF):
			return 0, io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

// Close implements io.Closer. Closing a body not read to its end drops the
// connection, so nothing more of it is received.
func (b *cappedBody) Close() error { return b.rc.Close() }

// describeLocation is a redirect's target as an error may quote it:
// redacted and cut.
func describeLocation(loc string, secrets []string) string {
	return cut(strings.TrimSpace(Redact(loc, secrets...)), maxLocation)
}
