package target

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestLimiterRate(t *testing.T) {
	clock := newWireClock()
	l := wireLimiter(clock, 2, 1) // 2 per second, burst 1
	for i := 0; i < 3; i++ {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{500 * time.Millisecond, 500 * time.Millisecond}
	if got := clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waits = %v, want %v", got, want)
	}

	burst := wireLimiter(newWireClock(), 1, 3)
	for i := 0; i < 3; i++ {
		if err := burst.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLimiterBackoff(t *testing.T) {
	clock := newWireClock()
	l := wireLimiter(clock, 0, 1) // no rate: back-off only
	if err := l.Wait(context.Background()); err != nil || len(clock.Sleeps()) != 0 {
		t.Fatalf("Wait without back-off: %v, waits %v", err, clock.Sleeps())
	}
	l.Backoff(3 * time.Second)
	l.Backoff(time.Second) // shorter: does not shorten the pause
	if got := l.PausedUntil().Sub(clock.Now()); got != 3*time.Second {
		t.Errorf("paused for %v, want 3s", got)
	}
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := clock.Total(); got != 3*time.Second {
		t.Errorf("waited %v, want 3s", got)
	}
	// Past the pause, no more waiting.
	if err := l.Wait(context.Background()); err != nil || clock.Total() != 3*time.Second {
		t.Errorf("second Wait: %v, total wait %v", err, clock.Total())
	}
	var nilLimiter *Limiter
	nilLimiter.Backoff(time.Second) // a nil Limiter ignores reports
}

func TestLimiterWaitCancelled(t *testing.T) {
	l := NewLimiter(0.001, 1) // one request per 1000s, real clock
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.Wait(ctx); err != context.DeadlineExceeded {
		t.Errorf("Wait = %v, want context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("Wait took %v", el)
	}
	l.Backoff(time.Hour)
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := l.Wait(done); err != context.Canceled {
		t.Errorf("Wait during a back-off with a cancelled context = %v", err)
	}
}

func TestWithRateLimitNil(t *testing.T) {
	var tg Target = Echo{}
	if got := WithRateLimit(tg, nil); got != tg {
		t.Errorf("WithRateLimit(t, nil) = %v, want t", got)
	}
}

// TestSharedBackoff runs two workers sharing one Limiter: when worker A
// gets a 429, worker B's next call waits out A's back-off before it sends
// anything, while A is still backing off.
func TestSharedBackoff(t *testing.T) {
	for _, tt := range []struct {
		name    string
		headers []string
		want    time.Duration
	}{
		{"Retry-After", []string{"Retry-After", "3"}, 3 * time.Second},
		{"no header", nil, 250 * time.Millisecond}, // A's jittered back-off
	} {
		t.Run(tt.name, func(t *testing.T) {
			ok := wireBody(t, "openai", "chat")
			limited := wireBody(t, "openai", "error_429")
			srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 0 {
					wireWriteJSON(w, http.StatusTooManyRequests, limited, tt.headers...)
					return
				}
				wireWriteJSON(w, http.StatusOK, ok)
			})
			provider := openOpenAITest(t, srv, nil)

			clock := newWireClock()
			limiter := wireLimiter(clock, 0, 1)
			backingOff := make(chan time.Duration)
			release := make(chan struct{})
			// Worker A's own wait blocks until the test releases it, so B
			// runs while A is backing off.
			policyA := wirePolicy(clock)
			policyA.Limiter = limiter
			policyA.Sleep = func(ctx context.Context, d time.Duration) error {
				backingOff <- d
				<-release
				return nil
			}
			workerA := WithRetry(WithRateLimit(provider, limiter), policyA)
			policyB := wirePolicy(clock)
			policyB.Limiter = limiter
			workerB := WithRetry(WithRateLimit(provider, limiter), policyB)

			errA := make(chan error, 1)
			go func() {
				_, err := workerA.Chat(context.Background(), wireHi)
				errA <- err
			}()
			waitA := <-backingOff
			if waitA != tt.want {
				t.Errorf("A backs off %v, want %v", waitA, tt.want)
			}

			errB := make(chan error, 1)
			go func() {
				_, err := workerB.Chat(context.Background(), wireHi)
				errB <- err
			}()
			if err := <-errB; err != nil {
				t.Fatalf("worker B: %v", err)
			}
			// B slept on the limiter (the fake clock) for A's back-off.
			if got := clock.Sleeps(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("B waited %v, want [%v]", got, tt.want)
			}
			if srv.Count() != 2 {
				t.Errorf("server got %d requests before A retried, want 2", srv.Count())
			}

			close(release)
			if err := <-errA; err != nil {
				t.Fatalf("worker A: %v", err)
			}
			if srv.Count() != 3 {
				t.Errorf("server got %d requests, want 3", srv.Count())
			}
		})
	}
}

// TestOpenWithSharesLimiter checks that OpenWith wires the limiter into
// the retry policy, so a 429 pauses the other targets sharing it.
func TestOpenWithSharesLimiter(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		wireWriteJSON(w, http.StatusTooManyRequests, []byte(`{"error":{"message":"slow down"}}`), "Retry-After", "5")
	})
	t.Setenv(OpenAIKeyEnv, testOpenAIKey)
	clock := newWireClock()
	limiter := wireLimiter(clock, 0, 1)
	p := wirePolicy(clock)
	p.MaxRetries = -1 // never retry: only the report matters here
	tg, err := OpenWith("openai:gpt-test", Options{OptBaseURL: srv.URL + "/v1"}, p, limiter)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Chat(context.Background(), wireHi); err == nil {
		t.Fatal("Chat succeeded against a 429")
	}
	if got := limiter.PausedUntil().Sub(clock.Now()); got != 5*time.Second {
		t.Errorf("limiter paused for %v, want 5s", got)
	}
	if srv.Count() != 1 {
		t.Errorf("server got %d requests, want 1", srv.Count())
	}
}
