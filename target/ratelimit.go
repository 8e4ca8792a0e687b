package target

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter paces the requests of every worker that shares it: a token
// bucket (requests per second, with a burst) and a shared back-off. When
// any call is rate limited (HTTP 429), Backoff pauses every caller of Wait
// until the back-off has passed, not just the one that was told. The retry
// wrapper reports 429s to the Limiter in its RetryPolicy. A Limiter is
// safe for concurrent use.
type Limiter struct {
	bucket *rate.Limiter // nil: no request rate limit, back-off only

	mu    sync.Mutex
	until time.Time // no request starts before this

	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// NewLimiter returns a Limiter allowing rps requests per second with the
// given burst (1 when burst < 1). rps <= 0 sets no rate, so the Limiter
// only applies the shared back-off.
func NewLimiter(rps float64, burst int) *Limiter {
	if burst < 1 {
		burst = 1
	}
	l := &Limiter{now: time.Now, sleep: sleepContext}
	if rps > 0 {
		l.bucket = rate.NewLimiter(rate.Limit(rps), burst)
	}
	return l
}

// Backoff pauses every caller of Wait for d from now, unless an earlier
// report already pauses them longer.
func (l *Limiter) Backoff(d time.Duration) {
	if l == nil || d <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := l.now().Add(d); until.After(l.until) {
		l.until = until
	}
}

// PausedUntil returns the end of the current shared back-off; it is in the
// past when there is none.
func (l *Limiter) PausedUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Wait blocks until the caller may send a request: the shared back-off has
// passed and the token bucket has a token. It returns ctx.Err() as soon as
// ctx is done.
func (l *Limiter) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.mu.Lock()
		wait := l.until.Sub(l.now())
		l.mu.Unlock()
		if wait <= 0 {
			break
		}
		// Check again after sleeping: another 429 may have extended it.
		if err := l.sleep(ctx, wait); err != nil {
			return err
		}
	}
	if l.bucket == nil {
		return nil
	}
	now := l.now()
	r := l.bucket.ReserveN(now, 1)
	if !r.OK() {
		return fmt.Errorf("rate limiter: cannot reserve a request")
	}
	if d := r.DelayFrom(now); d > 0 {
		if err := l.sleep(ctx, d); err != nil {
			r.CancelAt(l.now())
			return err
		}
	}
	return nil
}

// WithRateLimit returns t with every call waiting on l first; a nil l
// returns t unchanged. Put it inside WithRetry so that retries are paced
// too (OpenWith does).
func WithRateLimit(t Target, l *Limiter) Target {
	if l == nil {
		return t
	}
	return &rateLimited{next: t, limiter: l}
}

type rateLimited struct {
	next    Target
	limiter *Limiter
}

var _ Target = (*rateLimited)(nil)

// Chat implements Target.
func (r *rateLimited) Chat(ctx context.Context, req Request) (Response, error) {
	if err := r.limiter.Wait(ctx); err != nil {
		return Response{}, err
	}
	return r.next.Chat(ctx, req)
}

// Unwrap returns the wrapped target.
func (r *rateLimited) Unwrap() Target { return r.next }

// String names the wrapped target.
func (r *rateLimited) String() string { return describeTarget(r.next) }

// sleepContext sleeps for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
