package objstore

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/pikit-go/pikit/report"
)

// A shard that ran for hours on a slow model leaves thousands of small
// parts, and reading them one request after another costs the store's
// latency thousands of times over (30 ms each: 3.5 minutes for 7,000).
// The sources of a shard are therefore read ahead: while one is read,
// the next small ones are fetched into memory, a few at a time and a
// bounded number of bytes in all.
const (
	aheadObjects = 16       // requests in flight at most
	aheadBytes   = 32 << 20 // bytes held, fetched and not yet read
	aheadLargest = 4 << 20  // a larger object is streamed when its turn comes
)

// object is one object of a shard, as the listing showed it.
type object struct {
	key  string
	size int64
}

// readAhead returns sources for objs, in order, whose Open fetches the
// objects after it ahead. Each pass (a first Open of the first source)
// starts afresh, so report.Dedup's two passes both read ahead.
func (s *Store) readAhead(ctx context.Context, u URL, objs []object) []report.Source {
	r := &reader{st: s, u: u, ctx: ctx, objs: objs}
	out := make([]report.Source, len(objs))
	for i, o := range objs {
		out[i] = report.Source{Name: u.Of(o.key), Open: func() (io.ReadCloser, error) { return r.open(i) }}
	}
	return out
}

type reader struct {
	st   *Store
	u    URL
	ctx  context.Context
	objs []object

	mu      sync.Mutex
	fetches map[int]*fetch // started and not yet opened, by index
	held    int64          // their bytes
	next    int            // the next index to consider fetching
}

type fetch struct {
	done chan struct{}
	body []byte
	err  error
}

func (r *reader) open(i int) (io.ReadCloser, error) {
	r.mu.Lock()
	if i == 0 || r.fetches == nil {
		// A new pass: what is held from the last one is dropped.
		r.fetches, r.held, r.next = map[int]*fetch{}, 0, i+1
	}
	f := r.fetches[i]
	delete(r.fetches, i)
	if f != nil {
		r.held -= r.objs[i].size
	}
	r.next = max(r.next, i+1)
	r.fill()
	r.mu.Unlock()
	if f == nil {
		rc, _, err := r.st.Get(r.ctx, r.u, r.objs[i].key, r.objs[i].size)
		return rc, err
	}
	<-f.done
	if f.err != nil {
		return nil, f.err
	}
	return io.NopCloser(bytes.NewReader(f.body)), nil
}

// fill starts fetches of the small objects after the one being read,
// within the bounds; it stops at the first large one (streamed in turn).
func (r *reader) fill() {
	for r.next < len(r.objs) && len(r.fetches) < aheadObjects {
		o := r.objs[r.next]
		if o.size > aheadLargest || r.held+o.size > aheadBytes {
			return
		}
		f := &fetch{done: make(chan struct{})}
		r.fetches[r.next] = f
		r.held += o.size
		r.next++
		go func() {
			defer close(f.done)
			f.body, f.err = r.st.getSmall(r.ctx, r.u, o)
		}()
	}
}

// getSmall reads a small object whole; Get refuses one larger than
// listed (the listing bounds what is held).
func (s *Store) getSmall(ctx context.Context, u URL, o object) ([]byte, error) {
	rc, _, err := s.Get(ctx, u, o.key, o.size)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	buf.Grow(int(o.size)) // the listed size: read without regrowing
	if _, err := buf.ReadFrom(rc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
