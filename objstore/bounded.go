package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// A store is someone else's server, and its answers are read with the
// same care as a file from others. Every answer but an object's body is
// read whole into memory by the client (a listing, an error, a multipart
// upload's receipt), so each is bounded in bytes; an object's body is
// bounded by its reader, to the size the listing gave; and a body that
// stops arriving is cut after a while, so a store can neither grow
// pikit's memory without end nor hold it forever.
const (
	// maxAnswer bounds an answer that is not an object's body: a listing
	// page of 1,000 keys of 1 KiB each is about 1.3 MB.
	maxAnswer = 4 << 20
	// maxHeader bounds an answer's headers (user metadata among them).
	maxHeader = 64 << 10
	// stallTimeout cuts a body from which nothing arrived for this long.
	stallTimeout = 2 * time.Minute
)

// errTooLarge is returned when a store's answer passes maxAnswer.
var errTooLarge = errors.New("answer larger than any a store sends")

// errStalled ends a body from which nothing arrived for stallTimeout.
var errStalled = errors.New("nothing arrived from the store")

// boundedTransport bounds a store's answers: see maxAnswer and
// stallTimeout.
type boundedTransport struct {
	base      http.RoundTripper
	maxAnswer int64
	stall     time.Duration
}

// newTransport returns base behind boundedTransport, cutting bodies
// stalled for stall.
func newTransport(base http.RoundTripper, stall time.Duration) http.RoundTripper {
	return boundedTransport{base: base, maxAnswer: maxAnswer, stall: stall}
}

// baseTransport returns t, or when nil a clone of Go's default transport
// with its headers bounded and awaited at most stallTimeout, trusting the
// certificates of AWS_CA_BUNDLE beside the system's.
func baseTransport(t http.RoundTripper) (http.RoundTripper, error) {
	if t != nil {
		return t, nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxResponseHeaderBytes = maxHeader
	tr.ResponseHeaderTimeout = stallTimeout
	if path := os.Getenv("AWS_CA_BUNDLE"); path != "" {
		pool, err := caBundle(path)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr, nil
}

// maxCABundle bounds the certificate file AWS_CA_BUNDLE names.
const maxCABundle = 4 << 20

// caBundle reads the PEM certificates at path into the system's pool.
func caBundle(path string) (*x509.CertPool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, maxCABundle+1))
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	if len(pem) > maxCABundle {
		return nil, fmt.Errorf("AWS_CA_BUNDLE %s: larger than %d MiB", path, maxCABundle>>20)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AWS_CA_BUNDLE %s: no PEM certificate in it", path)
	}
	return pool, nil
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	limit, listed := t.maxAnswer, false
	if isObjectBody(req, resp) {
		// An object's body is bounded here by its listed size, when the
		// caller knows it, rather than by its reader: the client itself
		// drains a body it refuses.
		limit = -1
		if n, ok := req.Context().Value(objectSizeKey{}).(int64); ok {
			limit, listed = n, true
		}
	}
	b := &guardedBody{rc: resp.Body, left: limit, bound: limit, listed: listed, ctx: ctx, cancel: cancel, stall: t.stall}
	b.timer = time.AfterFunc(t.stall, func() { cancel(fmt.Errorf("%w for %v", errStalled, t.stall)) })
	resp.Body = b
	return resp, nil
}

type objectSizeKey struct{}

// withObjectSize tells the transport the size an object was listed with:
// its body is cut past it.
func withObjectSize(ctx context.Context, size int64) context.Context {
	return context.WithValue(ctx, objectSizeKey{}, size)
}

// isObjectBody reports whether resp carries an object's content: a
// successful GET that is not a listing.
func isObjectBody(req *http.Request, resp *http.Response) bool {
	if req.Method != http.MethodGet || resp.StatusCode/100 != 2 {
		return false
	}
	q := req.URL.Query()
	return !q.Has("list-type") && !q.Has("uploads") && !q.Has("uploadId") && !q.Has("location")
}

// guardedBody is an answer's body with its bounds: at most left bytes
// (-1: any), and a stall timer reset by every read that brings bytes.
type guardedBody struct {
	rc     io.ReadCloser
	left   int64
	bound  int64
	listed bool // the bound is an object's listed size: a shorter body is an error too
	ctx    context.Context
	cancel context.CancelCauseFunc
	stall  time.Duration

	mu    sync.Mutex
	timer *time.Timer
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		// Exactly the bound read: one more byte says whether there is more.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		switch {
		case n > 0 && b.listed:
			return 0, fmt.Errorf("larger than the %d bytes listed (changed while read?)", b.bound)
		case n > 0:
			return 0, fmt.Errorf("%w (over %d bytes)", errTooLarge, b.bound)
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return 0, err
	}
	if b.left > 0 && int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if n > 0 {
		b.mu.Lock()
		b.timer.Reset(b.stall)
		b.mu.Unlock()
	}
	switch {
	case err == io.EOF && b.listed && b.left > 0:
		return n, fmt.Errorf("%d bytes short of the %d listed: %w", b.left, b.bound, io.ErrUnexpectedEOF)
	case err != nil && err != io.EOF && b.ctx.Err() != nil:
		return n, context.Cause(b.ctx) // errStalled, or the caller's own
	}
	return n, err
}

func (b *guardedBody) Close() error {
	b.mu.Lock()
	b.timer.Stop()
	b.mu.Unlock()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}
