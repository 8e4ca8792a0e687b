package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
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
	maxAnswer = 8 << 20
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

// boundedClient returns the client the store's requests go through: c
// (nil: the SDK's default), its headers bounded and awaited at most stall
// where it lets them be, behind boundedTransport.
func boundedClient(c aws.HTTPClient, stall time.Duration) aws.HTTPClient {
	if c == nil {
		c = awshttp.NewBuildableClient()
	}
	if b, ok := c.(*awshttp.BuildableClient); ok {
		c = b.WithTransportOptions(func(t *http.Transport) {
			t.MaxResponseHeaderBytes = maxHeader
			t.ResponseHeaderTimeout = stall
		})
	}
	return doer{boundedTransport{base: roundTripper{c}, maxAnswer: maxAnswer, stall: stall}}
}

// roundTripper sends requests through a client, as a transport.
type roundTripper struct{ c aws.HTTPClient }

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return r.c.Do(req) }

// doer sends requests through a transport, as a client.
type doer struct{ t http.RoundTripper }

func (d doer) Do(req *http.Request) (*http.Response, error) { return d.t.RoundTrip(req) }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel(nil)
		return nil, err
	}
	limit := t.maxAnswer
	if isObjectBody(req, resp) {
		limit = -1 // bounded by the reader, to the listed size
	}
	b := &guardedBody{rc: resp.Body, left: limit, ctx: ctx, cancel: cancel, stall: t.stall}
	b.timer = time.AfterFunc(t.stall, func() { cancel(fmt.Errorf("%w for %v", errStalled, t.stall)) })
	resp.Body = b
	return resp, nil
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
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w (over %d bytes)", errTooLarge, maxAnswer)
		}
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
	if err != nil && err != io.EOF && b.ctx.Err() != nil {
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
