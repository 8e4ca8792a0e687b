package target

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Cache stores model responses on disk, keyed by a hash of the exact
// request (target spec, system prompt, messages, tools, temperature, seed),
// a salt the caller puts in the context (such as the repeat index), and,
// for a request sampled at a temperature above 0 (or at the provider's
// default, when it sets none), the sample the context names (such as the
// cell): two cells that send the same request at temperature 0.7 are two
// samples of the model and each gets its own answer, while at temperature
// 0 identical requests share one. Only successful responses are stored.
// It is safe for concurrent use, also by several processes.
type Cache struct {
	dir          string
	hits, misses atomic.Int64
	secrets      *ValueRedactor // the environment's API keys, never stored
}

// OpenCache opens (creating) a cache directory.
func OpenCache(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{dir: dir, secrets: NewValueRedactor(EnvSecrets()...)}, nil
}

// Stats returns the hits and misses so far.
func (c *Cache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

type cacheCtxKey int

const (
	saltKey cacheCtxKey = iota
	hitsKey
	sampleKey
)

// WithCacheSalt returns a context whose requests are cached apart from the
// same requests under another salt.
func WithCacheSalt(ctx context.Context, salt string) context.Context {
	return context.WithValue(ctx, saltKey, salt)
}

// WithCacheSample returns a context whose sampled requests (temperature
// above 0, or none given) are cached as the sample named id: the same
// request under another id is another draw from the model, answered apart.
// A request at temperature 0 ignores it. The matrix runner names each cell
// (its key, which includes the repeat index).
func WithCacheSample(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sampleKey, id)
}

// sampled reports whether a request draws a sample: a temperature above
// 0, or none (the provider's default, above 0 for every provider pikit
// knows).
func sampled(req Request) bool {
	return req.Temperature == nil || *req.Temperature != 0
}

// WithCacheHits returns a context in which every cache hit increments n, so
// a caller can tell which of its calls were served from the cache.
func WithCacheHits(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, hitsKey, n)
}

// WithCache wraps t so that responses to requests already seen come from
// c instead of the network. spec names the target in the key.
func WithCache(t Target, c *Cache, spec string) Target {
	return &cached{t: t, c: c, spec: spec}
}

type cached struct {
	t    Target
	c    *Cache
	spec string
}

var _ Target = (*cached)(nil)

func (w *cached) Chat(ctx context.Context, req Request) (Response, error) {
	salt, _ := ctx.Value(saltKey).(string)
	sample := ""
	if sampled(req) {
		sample, _ = ctx.Value(sampleKey).(string)
	}
	// A request at temperature 0 has no sample, and its key is the one
	// earlier versions gave it: a cache they filled still answers it.
	b, err := json.Marshal(struct {
		Spec   string  `json:"spec"`
		Salt   string  `json:"salt"`
		Sample string  `json:"sample,omitempty"`
		Req    Request `json:"request"`
	}{w.spec, salt, sample, req})
	if err != nil {
		return w.t.Chat(ctx, req)
	}
	sum := sha256.Sum256(b)
	key := hex.EncodeToString(sum[:])
	path := filepath.Join(w.c.dir, key[:2], key+".json")
	if data, err := os.ReadFile(path); err == nil {
		var resp Response
		if json.Unmarshal(data, &resp) == nil {
			w.c.hits.Add(1)
			if n, ok := ctx.Value(hitsKey).(*atomic.Int64); ok {
				n.Add(1)
			}
			return resp, nil
		}
	}
	w.c.misses.Add(1)
	resp, err := w.t.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	if err := w.c.store(path, resp); err != nil {
		return resp, fmt.Errorf("cache: %w", err)
	}
	return resp, nil
}

// store writes a response atomically: a temporary file renamed into place.
// An API key the model echoed is redacted first: the cache is a file like
// any other pikit writes.
func (c *Cache) store(path string, resp Response) error {
	if !c.secrets.Empty() {
		resp.Text = c.secrets.Redact(resp.Text)
		resp.ToolCalls = append([]ToolCall(nil), resp.ToolCalls...)
		for i := range resp.ToolCalls {
			tc := &resp.ToolCalls[i]
			tc.Name, tc.Arguments = c.secrets.Redact(tc.Name), c.secrets.Redact(tc.Arguments)
		}
	}
	data, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
