package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// fault answers some requests with an error before the store sees them.
type fault struct {
	mu   sync.Mutex
	fail func(r *http.Request) int // a status to answer with, or 0
	hits atomic.Int64
}

// fakeS3 serves an in-memory S3 (gofakes3) with one bucket, "results",
// behind a fault injector, and returns a Store that reaches it.
func fakeS3(t testing.TB) (*Store, *fault) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test-access")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask an instance for credentials
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	for _, v := range EndpointEnv {
		t.Setenv(v, "")
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("results"); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(backend).Server()
	f := &fault{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		f.mu.Lock()
		fail := f.fail
		f.mu.Unlock()
		if fail != nil {
			if code := fail(r); code != 0 {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				if code == http.StatusTooManyRequests {
					w.Header().Set("Retry-After", "0")
				}
				w.WriteHeader(code)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected</Message></Error>`, codeOf(code))
				return
			}
		}
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	st, err := Open(context.Background(), Options{Endpoint: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	return st, f
}

func codeOf(status int) string {
	switch status {
	case http.StatusServiceUnavailable:
		return "SlowDown"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case http.StatusForbidden:
		return "AccessDenied"
	}
	return "InternalError"
}

func (f *fault) set(fn func(r *http.Request) int) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

// lines encodes results for keys with outcome as pikit's JSONL writer
// does.
func lines(t testing.TB, keys []string, outcome judge.Outcome) []byte {
	t.Helper()
	var b bytes.Buffer
	w := report.NewJSONL(&b)
	for _, k := range keys {
		r := matrix.Result{Key: k, Attack: "naive", Agent: "chat", Target: "mock", Outcome: outcome, Success: outcome == judge.FullSuccess}
		if outcome == judge.RuntimeError {
			r.Error = "boom"
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return b.Bytes()
}

func keysN(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%016x", from+i)
	}
	return out
}

// stored reads back the prefix's results: key → outcome, failing on a key
// seen twice.
func stored(t *testing.T, st *Store, u URL) map[string]judge.Outcome {
	t.Helper()
	p, err := st.Inspect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	rc := st.Open(context.Background(), p)
	defer rc.Close()
	got := map[string]judge.Outcome{}
	partial, err := report.ScanKeys(rc, func(li report.LineInfo) error {
		if _, dup := got[li.Key]; dup {
			t.Errorf("key %s read twice", li.Key)
		}
		got[li.Key] = li.Outcome
		return nil
	})
	if err != nil || partial != nil {
		t.Fatalf("reading %s: %v (partial %q)", u, err, partial)
	}
	return got
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in, bucket, prefix, err string
	}{
		{in: "s3://results/nightly/", bucket: "results", prefix: "nightly/"},
		{in: "s3://results/nightly", bucket: "results", prefix: "nightly/"},
		{in: "S3://results/a/b/", bucket: "results", prefix: "a/b/"},
		{in: "s3://results", bucket: "results", prefix: ""},
		{in: "s3://results/", bucket: "results", prefix: ""},
		{in: "s3://results/all.jsonl", err: "not one results file"},
		{in: "s3:///x/", err: "no bucket name"},
		{in: "s3://ab/x/", err: "3 to 63"},
		{in: "s3://bad~name/x/", err: "only letters"},
		{in: "s3://results/a//b/", err: "empty segment"},
		{in: "s3://results/a\x1b[31m/", err: "control characters"},
		{in: "s3://results/" + strings.Repeat("a", 1000) + "/", err: "bytes long"},
		{in: "results/x/", err: "want s3://"},
	} {
		u, err := ParseURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseURL(%q) = %v, %v; want an error with %q", c.in, u, err, c.err)
			}
			if err != nil && strings.ContainsRune(err.Error(), 0x1b) {
				t.Errorf("ParseURL(%q): the error carries an escape: %q", c.in, err)
			}
			continue
		}
		if err != nil || u.Bucket != c.bucket || u.Prefix != c.prefix {
			t.Errorf("ParseURL(%q) = %+v, %v; want %s %q", c.in, u, err, c.bucket, c.prefix)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	for in, ok := range map[string]bool{
		"http://127.0.0.1:9000":           true,
		"https://s3.example.test":         true,
		"ftp://x":                         false,
		"http://user:secret@host:9000":    false,
		"http://host:9000/?X-Amz-Token=1": false,
		"http://host:9000/#f":             false,
		"http://host:9000/bucket":         false,
		"127.0.0.1:9000":                  false,
	} {
		err := CheckEndpoint(in)
		if (err == nil) != ok {
			t.Errorf("CheckEndpoint(%q) = %v", in, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckEndpoint(%q) shows the password: %v", in, err)
		}
	}
}

func TestShardWrittenFinishedAndReadBack(t *testing.T) {
	st, _ := fakeS3(t)
	ctx := context.Background()
	u, _ := ParseURL("s3://results/run1/")
	sh := Shard{2, 3}
	out, done, _, err := st.OpenShard(ctx, u, sh, OutputOptions{Resume: true, FlushEvery: time.Hour})
	if err != nil || len(done) != 0 {
		t.Fatalf("OpenShard on nothing: %v, %d done", err, len(done))
	}
	keys := keysN(0, 500)
	body := lines(t, keys, judge.FullSuccess)
	// Written in uneven pieces, as a buffered writer may.
	for len(body) > 0 {
		n := min(len(body), 777)
		if _, err := out.Write(body[:n]); err != nil {
			t.Fatal(err)
		}
		body = body[n:]
	}
	sum, err := out.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Results != 500 || sum.Shard != 2 || sum.Shards != 3 || sum.Summary.ASR.Successes != 500 {
		t.Errorf("summary %+v", sum)
	}
	p, err := st.Inspect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Shard(sh)
	if !s.Finished() || len(s.Parts) != 0 {
		t.Errorf("after Finish: %+v", s)
	}
	if got := p.Unfinished(); len(got) != 2 || got[0].K != 1 || got[1].K != 3 {
		t.Errorf("Unfinished = %v, want shards 1 and 3", got)
	}
	if got := stored(t, st, u); len(got) != 500 {
		t.Errorf("read back %d results, want 500", len(got))
	}
	// A finished shard is refused without --resume or --force.
	if _, _, _, err := st.OpenShard(ctx, u, sh, OutputOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("OpenShard without resume on a finished shard: %v", err)
	}
	// Another run's shard count under the same prefix is refused.
	if _, _, _, err := st.OpenShard(ctx, u, Shard{1, 4}, OutputOptions{Resume: true}); err == nil || !strings.Contains(err.Error(), "run in 3") {
		t.Errorf("OpenShard of 4 under a run of 3: %v", err)
	}
	// --force starts it over.
	out, done, _, err = st.OpenShard(ctx, u, sh, OutputOptions{Force: true})
	if err != nil || len(done) != 0 {
		t.Fatalf("force: %v %d", err, len(done))
	}
	out.Write(lines(t, keysN(1000, 3), judge.Refused))
	if _, err := out.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, st, u); len(got) != 3 || got[keysN(1000, 1)[0]] != judge.Refused {
		t.Errorf("after force: %v", got)
	}
}

// A process killed mid-run leaves the parts it uploaded; --resume keeps
// them, reruns the rest, and the finished shard holds each cell once.
func TestKilledShardResumes(t *testing.T) {
	st, _ := fakeS3(t)
	ctx := context.Background()
	u, _ := ParseURL("s3://results/run2/")
	sh := Shard{1, 1}
	out, _, _, err := st.OpenShard(ctx, u, sh, OutputOptions{FlushEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	all := keysN(0, 300)
	out.Write(lines(t, all[:100], judge.FullSuccess))
	waitParts(t, out, 1)
	out.Write(lines(t, all[100:150], judge.RuntimeError)) // failed cells: run again
	waitParts(t, out, 2)
	out.Write(lines(t, all[150:200], judge.Refused)) // never uploaded: the process dies now
	out.pw.kill()
	out2, done, dropped, err := st.OpenShard(ctx, u, sh, OutputOptions{Resume: true, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 100 || dropped != 50 {
		t.Fatalf("resume: %d done, %d dropped; want 100 and 50", len(done), dropped)
	}
	for _, k := range all[:100] {
		if !done[k] {
			t.Fatalf("key %s uploaded but not done", k)
		}
	}
	var rest []string
	for _, k := range all {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	out2.Write(lines(t, rest, judge.Refused))
	sum, err := out2.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, st, u)
	if len(got) != 300 || sum.Results != 300 || sum.Errors != 0 {
		t.Fatalf("finished shard: %d results (summary %d, %d errors), want 300 and none", len(got), sum.Results, sum.Errors)
	}
	for _, k := range all[100:150] {
		if got[k] != judge.Refused {
			t.Errorf("key %s: %s, want the rerun's refused over the runtime error", k, got[k])
		}
	}
	p, _ := st.Inspect(ctx, u)
	if s := p.Shard(sh); !s.Finished() || len(s.Parts) != 0 {
		t.Errorf("after finish: %+v", s)
	}
	// The first writer's late part, were it to land now, is past the
	// object: the shard reads as unfinished, each key still once.
	late := st.Put(ctx, u, sh.partKey(u, 99, "dead"), lines(t, all[:1], judge.RuntimeError), nil)
	if late != nil {
		t.Fatal(late)
	}
	p, _ = st.Inspect(ctx, u)
	if len(p.Unfinished()) != 1 {
		t.Errorf("a part after the summary should leave the shard unfinished")
	}
	if got := stored(t, st, u); len(got) != 300 || got[all[0]] != judge.FullSuccess {
		t.Errorf("with a late failed part: %d results, key 0 %s", len(got), got[all[0]])
	}
}

// kill stops a writer as SIGKILL would: what is buffered is never sent.
func (w *partWriter) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.closed, w.buf = true, nil
}

func waitParts(t *testing.T, o *Output, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for o.parts() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d parts uploaded after 10s, want %d", o.parts(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Throttling and server errors are retried; an upload that keeps failing
// fails the writes after it, and what was buffered is not lost silently.
func TestUploadRetriesAndFails(t *testing.T) {
	st, f := fakeS3(t)
	ctx := context.Background()
	u, _ := ParseURL("s3://results/run3/")
	var puts atomic.Int64
	f.set(func(r *http.Request) int {
		if r.Method != http.MethodPut {
			return 0
		}
		switch puts.Add(1) {
		case 1:
			return http.StatusServiceUnavailable
		case 2:
			return http.StatusTooManyRequests
		case 3:
			return http.StatusInternalServerError
		}
		return 0
	})
	out, _, _, err := st.OpenShard(ctx, u, Shard{1, 1}, OutputOptions{FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	out.Write(lines(t, keysN(0, 10), judge.Refused))
	if _, err := out.Finish(ctx); err != nil {
		t.Fatalf("Finish after three retried failures: %v", err)
	}
	if got := stored(t, st, u); len(got) != 10 {
		t.Errorf("%d results, want 10", len(got))
	}
	// Now every write is refused.
	f.set(func(r *http.Request) int {
		if r.Method == http.MethodPut {
			return http.StatusForbidden
		}
		return 0
	})
	out, _, _, err = st.OpenShard(ctx, u, Shard{1, 1}, OutputOptions{Resume: true, FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	out.Write(lines(t, keysN(100, 1), judge.Refused))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := out.Write(lines(t, keysN(101, 1), judge.Refused))
		if err != nil {
			if !strings.Contains(err.Error(), "AccessDenied") || strings.Contains(err.Error(), "test-secret") {
				t.Errorf("write error: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes still accepted 10s after uploads began failing")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := out.Close(); err == nil {
		t.Error("Close after failed uploads returned nil")
	}
}

// Malformed answers from the store are errors, not panics or results.
func TestMalformedAnswers(t *testing.T) {
	st, _ := fakeS3(t)
	ctx := context.Background()
	u, _ := ParseURL("s3://results/run4/")
	// A store that answers a listing with a 200 and half an XML body.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<?xml version="1.0"?><ListBucketResult><Contents><Key>shard-1-of-1.js`)
	}))
	defer ts.Close()
	bad, err := Open(ctx, Options{Endpoint: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Inspect(ctx, u); err == nil {
		t.Error("a truncated listing was read without error")
	}
	// A hostile object under the prefix: a summary whose metadata is
	// not a number, and names that are not a shard's.
	st.Put(ctx, u, u.Key("shard-1-of-1.summary.json"), []byte("{}"), map[string]string{metaThrough: "12abc"})
	st.Put(ctx, u, u.Key("notes.txt"), []byte("hello"), nil)
	st.Put(ctx, u, u.Key("shard-9-of-2.jsonl"), []byte("{}\n"), nil)
	_, err = st.Inspect(ctx, u)
	if err == nil || !strings.Contains(err.Error(), "not a part number") || strings.ContainsRune(err.Error(), 0x1b) {
		t.Errorf("hostile metadata: %v", err)
	}
	st.Delete(ctx, u, []string{u.Key("shard-1-of-1.summary.json")})
	st.Put(ctx, u, u.Key("shard-1-of-1.summary.json"), []byte("{}"), nil)
	p, err := st.Inspect(ctx, u)
	if err != nil || p.Other != 2 || p.N != 1 {
		t.Errorf("Inspect with foreign names: %+v %v", p, err)
	}
	// A results object that is not results fails the read, naming it.
	st.Put(ctx, u, u.Key("shard-1-of-1.jsonl"), []byte("not json\n"), nil)
	st.Put(ctx, u, u.Key("shard-1-of-1.parts/000001-ab.jsonl"), lines(t, keysN(0, 1), judge.Refused), nil)
	if p, err = st.Inspect(ctx, u); err != nil {
		t.Fatal(err)
	}
	rc := st.Open(ctx, p)
	_, err = io.ReadAll(rc)
	if err == nil || !strings.Contains(err.Error(), "shard-1-of-1.jsonl") {
		t.Errorf("reading a non-results object: %v", err)
	}
}

func TestUploadLargeStreamsInPieces(t *testing.T) {
	st, f := fakeS3(t)
	ctx := context.Background()
	u, _ := ParseURL("s3://results/big/")
	var pieces atomic.Int64
	f.set(func(r *http.Request) int {
		if r.URL.Query().Has("partNumber") {
			pieces.Add(1)
		}
		return 0
	})
	body := make([]byte, 2*uploadPart+12345)
	rand.Read(body)
	if err := st.Upload(ctx, u, u.Key("blob"), bytes.NewReader(body), map[string]string{metaThrough: "7"}); err != nil {
		t.Fatal(err)
	}
	if pieces.Load() != 3 {
		t.Errorf("%d pieces sent, want 3", pieces.Load())
	}
	rc, meta, err := st.Get(ctx, u, u.Key("blob"), -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, body) {
		t.Errorf("read back %d bytes, differing from the %d sent", len(got), len(body))
	}
	if v, _ := metaValue(meta, metaThrough); v != "7" {
		t.Errorf("metadata %v", meta)
	}
	// Exactly one piece's worth goes as one request.
	if err := st.Upload(ctx, u, u.Key("exact"), bytes.NewReader(body[:uploadPart]), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, u, u.Key("missing"), -1); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a missing object: %v", err)
	}
}

func TestParseName(t *testing.T) {
	for _, c := range []struct {
		in              string
		kind, k, n, seq int
	}{
		{"shard-3-of-8.jsonl", nameResults, 3, 8, 0},
		{"shard-3-of-8.summary.json", nameSummary, 3, 8, 0},
		{"shard-3-of-8.parts/000042-0a1b2c3d.jsonl", namePart, 3, 8, 42},
		{"shard-100000-of-100000.jsonl", nameResults, 100000, 100000, 0},
		{"shard-3-of-8.parts/123456789-f.jsonl", namePart, 3, 8, 123456789},
		{"shard-03-of-8.jsonl", 0, 0, 0, 0},         // a leading zero
		{"shard-0-of-8.jsonl", 0, 0, 0, 0},          // shards count from 1
		{"shard-1234567-of-8.jsonl", 0, 0, 0, 0},    // seven digits
		{"shard-3-of-8.json", 0, 0, 0, 0},           // another extension
		{"shard-3-of-8.jsonl.bak", 0, 0, 0, 0},      // a suffix after it
		{"shard-3-of-8.parts/42.jsonl", 0, 0, 0, 0}, // no writer id
		{"shard-3-of-8.parts/42-XYZ.jsonl", 0, 0, 0, 0},
		{"shard-3-of-8.parts/1234567890-a.jsonl", 0, 0, 0, 0},
		{"shard-3-of-8.parts/42-" + strings.Repeat("a", 33) + ".jsonl", 0, 0, 0, 0},
		{"x/shard-3-of-8.jsonl", 0, 0, 0, 0}, // another run's, deeper
		{"shard--of-8.jsonl", 0, 0, 0, 0},
		{"", 0, 0, 0, 0},
	} {
		kind, k, n, seq, ok := parseName(c.in)
		if ok != (c.kind != 0) || ok && (kind != c.kind || k != c.k || n != c.n || seq != c.seq) {
			t.Errorf("parseName(%q) = %d %d %d %d %v, want %d %d %d %d", c.in, kind, k, n, seq, ok, c.kind, c.k, c.n, c.seq)
		}
	}
	// Every name the writer makes reads back.
	u := URL{Bucket: "b", Prefix: "p/"}
	sh := Shard{7, 12}
	for key, want := range map[string]int{sh.resultsKey(u): nameResults, sh.summaryKey(u): nameSummary, sh.partKey(u, 3, "00ff"): namePart} {
		if kind, k, n, _, ok := parseName(strings.TrimPrefix(key, u.Prefix)); !ok || kind != want || k != 7 || n != 12 {
			t.Errorf("%s does not read back", key)
		}
	}
}

// A shard of many small parts is read ahead: in order, each key once,
// and at the store's throughput rather than its latency.
func TestManyPartsReadAhead(t *testing.T) {
	st, f := fakeS3(t)
	ctx := context.Background()
	u, _ := ParseURL("s3://results/long/")
	sh := Shard{1, 1}
	const parts = 300
	for i := 1; i <= parts; i++ {
		body := lines(t, keysN(i*10, 2), judge.Refused)
		switch i {
		case 5:
			body = append(body, lines(t, []string{"dup"}, judge.Refused)...)
		case 200:
			body = append(body, lines(t, []string{"dup"}, judge.FullSuccess)...)
		}
		if err := st.Put(ctx, u, sh.partKey(u, i, "ab"), body, nil); err != nil {
			t.Fatal(err)
		}
	}
	const latency = 10 * time.Millisecond
	var gets atomic.Int64
	f.set(func(r *http.Request) int {
		if r.Method == http.MethodGet && !r.URL.Query().Has("list-type") {
			gets.Add(1)
			time.Sleep(latency)
		}
		return 0
	})
	start := time.Now()
	_, done, _, err := st.OpenShard(ctx, u, sh, OutputOptions{Resume: true})
	took := time.Since(start)
	if err != nil || len(done) != 2*parts+1 {
		t.Fatalf("resume over %d parts: %d done, %v", parts, len(done), err)
	}
	t.Logf("%d parts, %v a read: their keys in %v (%v one after another)", parts, latency, took.Round(time.Millisecond), parts*latency)
	if took > parts*latency/2 {
		t.Errorf("reading %d parts took %v: not read ahead (one after another: %v)", parts, took, parts*latency)
	}
	// Both passes of a dedup read ahead too, and keep the file order.
	start = time.Now()
	got := map[string]judge.Outcome{}
	p, _ := st.Inspect(ctx, u)
	rc := st.Open(ctx, p)
	n := 0
	if _, err := report.ScanKeys(rc, func(li report.LineInfo) error {
		n++
		got[li.Key] = li.Outcome
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if n != 2*parts+1 || got["dup"] != judge.Refused {
		t.Errorf("read %d lines, dup %s; want %d and the first result, refused", n, got["dup"], 2*parts+1)
	}
	if took := time.Since(start); took > parts*latency {
		t.Errorf("two passes over %d parts took %v", parts, took)
	}
	if gets.Load() != 3*parts {
		t.Errorf("%d objects read, want each of %d once per pass (3 passes)", gets.Load(), parts)
	}
}
