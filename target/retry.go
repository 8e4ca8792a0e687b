package target

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"time"
)

// Defaults of a RetryPolicy's zero fields.
const (
	DefaultMaxRetries     = 5
	DefaultBaseDelay      = 500 * time.Millisecond
	DefaultMaxDelay       = 30 * time.Second
	DefaultAttemptTimeout = 60 * time.Second
	DefaultMaxRetryAfter  = 2 * time.Minute
)

// RetryPolicy says how WithRetry retries a failed call. Classify decides
// which failures are retried. The zero value is the default policy.
type RetryPolicy struct {
	// MaxRetries is how many times a call is retried after its first
	// attempt: 0 means DefaultMaxRetries, negative means never.
	MaxRetries int
	// BaseDelay and MaxDelay shape the exponential back-off with full
	// jitter: before retry n (from 0) the wrapper waits a random time in
	// [0, min(MaxDelay, BaseDelay·2ⁿ)). Zero means the default.
	BaseDelay, MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the wrapper honours; a
	// server asking for more ends the retries with its error. Zero means
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
	// AttemptTimeout bounds each attempt: 0 means DefaultAttemptTimeout,
	// negative means no bound but the caller's context. A timed-out
	// attempt is retried.
	AttemptTimeout time.Duration
	// Limiter, when set, is told of every 429 so that every worker sharing
	// it waits out the back-off, not just the one that got it.
	Limiter *Limiter
	// OnRetry, when set, is called before each wait, with the retry's
	// number (from 1), the wait and the error that caused it; for progress
	// logs.
	OnRetry func(retry int, wait time.Duration, err error)

	// Rand returns a number in [0, 1) for the jitter; nil means
	// math/rand/v2. Tests inject it.
	Rand func() float64
	// Sleep waits d or until ctx is done, returning ctx.Err() then; nil
	// means a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// withDefaults fills the zero fields.
func (p RetryPolicy) withDefaults() RetryPolicy {
	switch {
	case p.MaxRetries == 0:
		p.MaxRetries = DefaultMaxRetries
	case p.MaxRetries < 0:
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.AttemptTimeout == 0 {
		p.AttemptTimeout = DefaultAttemptTimeout
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	if p.Sleep == nil {
		p.Sleep = sleepContext
	}
	return p
}

// Backoff returns the jittered wait before retry n (from 0).
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.withDefaults()
	ceiling := p.MaxDelay
	if n < 62 {
		if d := p.BaseDelay << n; d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(p.Rand() * float64(ceiling))
}

// WithRetry returns t retrying failed calls under policy p: retryable
// failures (see Classify) are sent again after an exponential back-off
// with full jitter, or after the server's Retry-After when that is
// longer; each attempt is bounded by p.AttemptTimeout; the caller's
// context bounds everything, and once it is done the call returns
// ctx.Err() at once. The SDKs' own retries are off, so this is the one
// retry policy.
func WithRetry(t Target, p RetryPolicy) Target {
	return &retrying{next: t, policy: p.withDefaults()}
}

type retrying struct {
	next   Target
	policy RetryPolicy
}

var _ Target = (*retrying)(nil)

// Chat implements Target. Each attempt takes a request from the Budget
// of ctx (see WithBudget) before it is sent; one the budget refuses is
// not sent, and the call ends with the budget's error.
func (r *retrying) Chat(ctx context.Context, req Request) (Response, error) {
	p := r.policy
	count := AttemptsOf(ctx)
	budget := BudgetOf(ctx)
	var last error
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return Response{}, err
		}
		if budget != nil {
			if err := budget.Take(); err != nil {
				if last != nil {
					err = fmt.Errorf("%w (after %d attempts, the last of which failed: %w)", err, attempt, last)
				}
				return Response{}, err
			}
		}
		start := time.Now()
		resp, err := r.attempt(ctx, req)
		if errors.Is(err, ErrMissingKey) {
			// Refused before it was sent.
			if budget != nil {
				budget.Give()
			}
			return Response{}, err
		}
		count.Add(attempt > 0, time.Since(start), err == nil)
		if err == nil {
			return resp, nil
		}
		last = err
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Response{}, ctxErr
		}
		retryable, after, status := Classify(err)
		// The server's Retry-After is the wait when it gives one: it knows
		// when it will serve again, and an exponential guess on top would
		// only idle every worker sharing the back-off.
		wait := after
		if wait <= 0 {
			wait = p.Backoff(attempt)
		}
		if status == http.StatusTooManyRequests {
			p.Limiter.Backoff(min(wait, p.MaxRetryAfter))
		}
		switch {
		case !retryable:
			return Response{}, err
		case attempt >= p.MaxRetries:
			return Response{}, fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		case after > p.MaxRetryAfter:
			return Response{}, fmt.Errorf("%w (the server asks to wait %s, more than the %s allowed)", err, after.Round(time.Second), p.MaxRetryAfter)
		}
		if p.OnRetry != nil {
			p.OnRetry(attempt+1, wait, err)
		}
		if err := p.Sleep(ctx, wait); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return Response{}, ctxErr
			}
			return Response{}, err
		}
	}
}

// attempt makes one call under the attempt timeout.
func (r *retrying) attempt(ctx context.Context, req Request) (Response, error) {
	timeout := r.policy.AttemptTimeout
	if timeout < 0 {
		return r.next.Chat(ctx, req)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := r.next.Chat(actx, req)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		// The attempt ran out of time, whatever the target made of that.
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		err = fmt.Errorf("%w (attempt timed out after %s)", err, timeout)
	}
	return resp, err
}

// Unwrap returns the wrapped target.
func (r *retrying) Unwrap() Target { return r.next }

// CountsAttempts reports that the wrapper adds every attempt it makes to
// the Attempts of its call's context: a caller that counts requests
// itself leaves those to it.
func (r *retrying) CountsAttempts() bool { return true }

// Attempts counts the model requests made for one piece of work, such as
// a cell: every attempt sent (retries included), how many of them were
// retries, and the time the attempts that got an answer took. Abandoned
// attempts (timed out, failed) and the back-off waits between attempts
// are left out of that time. WithRetry adds to the Attempts its call's
// context carries (see WithAttempts). The zero value is ready; a nil
// *Attempts counts nothing. It is safe for concurrent use.
type Attempts struct {
	sent, retries atomic.Int64
	answered      atomic.Int64 // nanoseconds
}

// Add counts one attempt: whether it was a retry, how long it took, and
// whether it got an answer.
func (a *Attempts) Add(retry bool, took time.Duration, answered bool) {
	if a == nil {
		return
	}
	a.sent.Add(1)
	if retry {
		a.retries.Add(1)
	}
	if answered {
		a.answered.Add(int64(took))
	}
}

// Counts returns the attempts sent, the retries among them, and the time
// the answered attempts took.
func (a *Attempts) Counts() (sent, retries int64, answered time.Duration) {
	if a == nil {
		return 0, 0, 0
	}
	return a.sent.Load(), a.retries.Load(), time.Duration(a.answered.Load())
}

type attemptsKey struct{}

// WithAttempts returns a context whose model requests are counted in a.
func WithAttempts(ctx context.Context, a *Attempts) context.Context {
	return context.WithValue(ctx, attemptsKey{}, a)
}

// AttemptsOf returns the Attempts a context carries, nil when none.
func AttemptsOf(ctx context.Context) *Attempts {
	a, _ := ctx.Value(attemptsKey{}).(*Attempts)
	return a
}

// A Budget admits a run's model requests one at a time. Take is called
// before a request is sent: a request it refuses (with an error that says
// why) is not sent. Give hands back a request taken but not sent after
// all (refused for a missing key). Implementations are safe for
// concurrent use; matrix.Runner's request and token budgets are one.
type Budget interface {
	Take() error
	Give()
}

type budgetKey struct{}

// WithBudget returns a context whose model requests take from b: WithRetry
// takes one for each attempt it sends. A nil b takes nothing.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// BudgetOf returns the Budget a context carries, nil when none.
func BudgetOf(ctx context.Context) Budget {
	b, _ := ctx.Value(budgetKey{}).(Budget)
	return b
}

// String names the wrapped target.
func (r *retrying) String() string { return describeTarget(r.next) }

// describeTarget names a target for logs.
func describeTarget(t Target) string {
	if s, ok := t.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", t)
}
