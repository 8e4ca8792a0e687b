package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostileS3 serves handler as a store and returns a Store that reaches it
// (credentials from the environment, never an instance's).
func hostileS3(t *testing.T, handler http.HandlerFunc) (*Store, *atomic.Int64) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test-access")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	for _, v := range EndpointEnv {
		t.Setenv(v, "")
	}
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		handler(w, r)
	}))
	t.Cleanup(ts.Close)
	st, err := Open(context.Background(), Options{Endpoint: ts.URL, StallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return st, &hits
}

// listPage writes one ListObjectsV2 page holding keys (each of size 10).
func listPage(w http.ResponseWriter, keys []string, truncated bool, next string) {
	w.Header().Set("Content-Type", "application/xml")
	fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>results</Name><Prefix>run/</Prefix>`)
	for _, k := range keys {
		fmt.Fprintf(w, `<Contents><Key>%s</Key><Size>10</Size></Contents>`, k)
	}
	fmt.Fprintf(w, `<KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>%t</IsTruncated>`, len(keys), truncated)
	if next != "" {
		fmt.Fprintf(w, `<NextContinuationToken>%s</NextContinuationToken>`, next)
	}
	fmt.Fprint(w, `</ListBucketResult>`)
}

func fresh() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestListHostileStores: a store whose listing never ends is given up on
// with an error that says why, after a bounded number of requests.
func TestListHostileStores(t *testing.T) {
	u, _ := ParseURL("s3://results/run/")
	tests := []struct {
		name    string
		page    func(w http.ResponseWriter, r *http.Request, n int64)
		want    string
		maxHits int64
	}{
		{
			name: "always truncated, a fresh token and one object a page",
			page: func(w http.ResponseWriter, r *http.Request, n int64) {
				listPage(w, []string{fmt.Sprintf("run/x-%09d", n)}, true, fresh())
			},
			want:    "pages in a row of fewer than",
			maxHits: maxShortPages,
		},
		{
			name: "always truncated, a fresh token and full pages",
			page: func(w http.ResponseWriter, r *http.Request, n int64) {
				keys := make([]string, shortPage)
				for i := range keys {
					keys[i] = fmt.Sprintf("run/x-%09d-%03d", n, i)
				}
				listPage(w, keys, true, fresh())
			},
			want:    "pages without an end",
			maxHits: maxPages,
		},
		{
			name: "the same token every page",
			page: func(w http.ResponseWriter, r *http.Request, n int64) {
				listPage(w, []string{fmt.Sprintf("run/x-%09d", n)}, true, "again")
			},
			want:    "same continuation token twice",
			maxHits: 2,
		},
		{
			name:    "truncated pages with nothing in them",
			page:    func(w http.ResponseWriter, r *http.Request, n int64) { listPage(w, nil, true, fresh()) },
			want:    "page with nothing in it",
			maxHits: 1,
		},
		{
			name:    "truncated without a token",
			page:    func(w http.ResponseWriter, r *http.Request, n int64) { listPage(w, []string{"run/a"}, true, "") },
			want:    "continuation token",
			maxHits: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int64
			st, hits := hostileS3(t, func(w http.ResponseWriter, r *http.Request) { tt.page(w, r, n.Add(1)) })
			start := time.Now()
			_, err := st.List(context.Background(), u)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("List: %v, want an error saying %q", err, tt.want)
			}
			if hits.Load() > tt.maxHits {
				t.Errorf("%d requests, want at most %d", hits.Load(), tt.maxHits)
			}
			t.Logf("%v after %d requests in %v", err, hits.Load(), time.Since(start).Round(time.Millisecond))
		})
	}
}

// objectHeaders writes the headers a store sends with an object.
func objectHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Last-Modified", "Tue, 08 Dec 2026 01:00:00 GMT")
	w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
}

// endless writes chunk to w until the client goes away.
func endless(w http.ResponseWriter, r *http.Request, chunk string) {
	for r.Context().Err() == nil {
		if _, err := io.WriteString(w, chunk); err != nil {
			return
		}
	}
}

// TestListPageThatNeverCloses: a listing page that streams objects
// without end is cut at maxAnswer, and memory stays near it.
func TestListPageThatNeverCloses(t *testing.T) {
	u, _ := ParseURL("s3://results/run/")
	st, hits := hostileS3(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>results</Name>`)
		endless(w, r, strings.Repeat(`<Contents><Key>run/shard-1-of-1.parts/000001-ab.jsonl</Key><Size>10</Size></Contents>`, 100))
	})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	peak := peakHeap(t)
	start := time.Now()
	_, err := st.List(context.Background(), u)
	if err == nil || !strings.Contains(err.Error(), errTooLarge.Error()) {
		t.Fatalf("List: %v, want %v", err, errTooLarge)
	}
	grew := peak() - before.HeapAlloc
	t.Logf("%v after %d requests in %v; heap grew by at most %d MB", err, hits.Load(), time.Since(start).Round(time.Millisecond), grew>>20)
	if grew > 32*maxAnswer {
		t.Errorf("heap grew by %d MB reading a bounded page", grew>>20)
	}
}

// peakHeap samples the heap until the returned function is called, and
// returns the highest figure seen.
func peakHeap(t *testing.T) func() uint64 {
	stop := make(chan struct{})
	done := make(chan uint64)
	go func() {
		var peak uint64
		var m runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(stop); return <-done }
}

// TestReadHostileObjects: a part whose body never ends is cut at its
// listed size, and one whose body stops arriving is cut after the stall
// timeout; neither hangs a report of the prefix.
func TestReadHostileObjects(t *testing.T) {
	u, _ := ParseURL("s3://results/run/")
	tests := []struct {
		name string
		body func(w http.ResponseWriter, r *http.Request)
		want string
	}{
		{"an endless body", func(w http.ResponseWriter, r *http.Request) { endless(w, r, strings.Repeat("x", 4096)) }, "larger than the 10 bytes listed"},
		{"a body that stops arriving", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "{")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, errStalled.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := hostileS3(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Has("list-type") {
					listPage(w, []string{"run/shard-1-of-1.parts/000001-ab.jsonl"}, false, "")
					return
				}
				objectHeaders(w)
				tt.body(w, r)
			})
			p, err := st.Inspect(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = st.Results(context.Background(), p, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Results: %v, want an error saying %q", err, tt.want)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("gave up after %v", d)
			}
			t.Logf("%v in %v", err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestGetShortBody: a body shorter than the listed size is an error, not
// a quiet end.
func TestGetShortBody(t *testing.T) {
	u, _ := ParseURL("s3://results/run/")
	st, _ := hostileS3(t, func(w http.ResponseWriter, r *http.Request) {
		objectHeaders(w)
		io.WriteString(w, "{}\n")
	})
	rc, _, err := st.Get(context.Background(), u, u.Key("a"), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); err == nil || !strings.Contains(err.Error(), "7 bytes short of the 10 listed") {
		t.Fatalf("ReadAll: %v, want an error saying the body is short", err)
	}
}
