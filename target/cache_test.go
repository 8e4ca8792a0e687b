package target

import (
	"context"
	"sync/atomic"
	"testing"
)

type countingTarget struct{ n atomic.Int64 }

func (c *countingTarget) Chat(_ context.Context, req Request) (Response, error) {
	c.n.Add(1)
	return Response{Text: "answer to " + req.Messages[len(req.Messages)-1].Content, Usage: Usage{PromptTokens: 3}}, nil
}

func TestCache(t *testing.T) {
	c, err := OpenCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner := &countingTarget{}
	tg := WithCache(inner, c, "openai:x")
	req := Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	ctx := context.Background()
	a, err := tg.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	b, err := tg.Chat(WithCacheHits(ctx, &hits), req)
	if err != nil || b.Text != a.Text || b.Usage != a.Usage {
		t.Fatalf("cached response differs: %+v %+v %v", a, b, err)
	}
	if inner.n.Load() != 1 || hits.Load() != 1 {
		t.Errorf("%d network calls and %d hits, want 1 and 1", inner.n.Load(), hits.Load())
	}
	// Another salt (a repeat) and another request are not served from it.
	if _, err := tg.Chat(WithCacheSalt(ctx, "repeat-1"), req); err != nil {
		t.Fatal(err)
	}
	req2 := Request{Messages: []Message{{Role: RoleUser, Content: "hello"}}}
	if _, err := tg.Chat(ctx, req2); err != nil {
		t.Fatal(err)
	}
	if inner.n.Load() != 3 {
		t.Errorf("%d network calls, want 3", inner.n.Load())
	}
	// A fresh cache over the same directory sees the stored responses.
	c2, _ := OpenCache(c.dir)
	inner2 := &countingTarget{}
	if _, err := WithCache(inner2, c2, "openai:x").Chat(ctx, req2); err != nil || inner2.n.Load() != 0 {
		t.Errorf("the cache did not persist: %v, %d calls", err, inner2.n.Load())
	}
	if h, m := c.Stats(); h != 1 || m != 3 {
		t.Errorf("stats %d hits %d misses", h, m)
	}
}

// TestCacheSamples (issue 21): a request sampled above temperature 0 is
// answered apart for each sample (cell) the context names; at temperature
// 0 the same request shares one answer across samples, under the key an
// older cache gave it.
func TestCacheSamples(t *testing.T) {
	temp := func(v float64) *float64 { return &v }
	msgs := []Message{{Role: RoleUser, Content: "hi"}}
	for _, tc := range []struct {
		name  string
		req   Request
		calls int64 // network calls for two cells, each asking twice
	}{
		{"temperature 0.7", Request{Messages: msgs, Temperature: temp(0.7)}, 2},
		{"provider default", Request{Messages: msgs}, 2},
		{"temperature 0", Request{Messages: msgs, Temperature: temp(0)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := OpenCache(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			inner := &countingTarget{}
			tg := WithCache(inner, c, "openai:x")
			salt := WithCacheSalt(context.Background(), "repeat 0")
			for _, cell := range []string{"cell-a", "cell-b", "cell-a", "cell-b"} {
				if _, err := tg.Chat(WithCacheSample(salt, cell), tc.req); err != nil {
					t.Fatal(err)
				}
			}
			if got := inner.n.Load(); got != tc.calls {
				t.Errorf("%d network calls, want %d", got, tc.calls)
			}
		})
	}
	// At temperature 0 the key is the one a cache filled before samples
	// existed: a request stored without a sample is found with one.
	c, _ := OpenCache(t.TempDir())
	inner := &countingTarget{}
	req := Request{Messages: msgs, Temperature: temp(0)}
	if _, err := WithCache(inner, c, "openai:x").Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := WithCache(inner, c, "openai:x").Chat(WithCacheSample(context.Background(), "cell-a"), req); err != nil || inner.n.Load() != 1 {
		t.Errorf("a temperature-0 answer stored without a sample was not found with one: %v, %d calls", err, inner.n.Load())
	}
}
