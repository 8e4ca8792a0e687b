package matrix_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// chatServer speaks the OpenAI Chat Completions format with a fixed
// latency; fault, when not nil, decides per request number whether to
// misbehave instead.
func chatServer(tb testing.TB, latency time.Duration, fault func(n int64, w http.ResponseWriter, r *http.Request) bool) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if fault != nil && fault(i, w, r) {
			return
		}
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"A short summary."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24}}`, i)
	}))
	tb.Cleanup(srv.Close)
	return srv, &n
}

// hang blocks a handler until the client gives up or the test ends.
func hang(tb testing.TB, r *http.Request) {
	stop := make(chan struct{})
	tb.Cleanup(func() { close(stop) })
	select {
	case <-r.Context().Done():
	case <-stop:
	}
}

func openAIRunner(tb testing.TB, url string, concurrency int, p target.RetryPolicy) matrix.Runner {
	tb.Setenv("OPENAI_API_KEY", "sk-bench")
	limiter := target.NewLimiter(0, 1)
	return matrix.Runner{Concurrency: concurrency, Open: func(spec string, opts target.Options) (target.Target, error) {
		return target.OpenWith(spec, target.Options{target.OptBaseURL: url + "/v1"}, p, limiter)
	}}
}

func plan400(tb testing.TB) []matrix.Cell {
	cfg, err := matrix.Parse("p.toml", []byte("attacks = [\"naive\", \"escape\", \"combined\", \"context_ignoring\"]\nrepeats = 100\ntarget_spec = \"openai:m\"\n"))
	if err != nil {
		tb.Fatal(err)
	}
	cells, err := matrix.Plan(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return cells
}

// BenchmarkLatency400 runs 400 cells against a server answering in 50 ms
// with 16 workers: the ideal is 400 × 50 ms / 16 = 1.25 s.
func BenchmarkLatency400(b *testing.B) {
	srv, n := chatServer(b, 50*time.Millisecond, nil)
	cells := plan400(b)
	r := openAIRunner(b, srv.URL, 16, target.RetryPolicy{})
	for b.Loop() {
		res, err := r.RunAll(context.Background(), cells)
		if err != nil || len(res) != 400 {
			b.Fatalf("%v, %d results", err, len(res))
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/1.25, "x_ideal")
	b.ReportMetric(float64(n.Load())/float64(b.N*400), "requests/cell")
}

// TestFaultsAreResults runs against a server that fails 40% of requests,
// in each way: 429, 500, a malformed body, and hanging past the attempt
// timeout. Retries absorb them (15 retries: the chance that some cell of
// 400 meets 16 faults in a row is under 1 in 2,000): no cell is lost or
// duplicated.
func TestFaultsAreResults(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	srv, n := chatServer(t, 0, func(i int64, w http.ResponseWriter, r *http.Request) bool {
		switch i % 10 {
		case 1:
			w.Header().Set("Retry-After-Ms", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
		case 3:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"boom"}}`)
		case 5:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"x","choices":[{"message":`)
		case 7:
			hang(t, r) // past the attempt timeout
		default:
			return false
		}
		return true
	})
	cells := plan400(t)
	r := openAIRunner(t, srv.URL, 8, target.RetryPolicy{MaxRetries: 15, AttemptTimeout: 100 * time.Millisecond, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	res, err := r.RunAll(context.Background(), cells)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	errs := 0
	for _, x := range res {
		keys[x.Key] = true
		if x.Outcome == judge.RuntimeError {
			errs++
		}
	}
	if len(res) != 400 || len(keys) != 400 {
		t.Fatalf("%d results, %d distinct keys; want 400", len(res), len(keys))
	}
	if errs != 0 {
		t.Errorf("%d cells failed although every fault was transient", errs)
	}
	t.Logf("400 cells, %d requests with 40%% of them faulty: 0 lost, %d errors", n.Load(), errs)
}
