package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeBucket serves an in-memory S3 with a bucket "results" and returns
// its endpoint, with test credentials in the environment.
func fakeBucket(t *testing.T) string {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "cli-test-access")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "cli-test-secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask an instance for credentials
	backend := s3mem.New()
	if err := backend.CreateBucket("results"); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(ts.Close)
	return ts.URL
}

// Three shards of one plan, written to one prefix, merge, report and
// gate as the same plan run on one machine does.
func TestS3ShardsEqualOneMachine(t *testing.T) {
	ep := fakeBucket(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	const prefix = "s3://results/nightly/"
	for k := 1; k <= 3; k++ {
		r := run(t, "matrix", "-c", cfg, "-o", prefix, "--s3-endpoint", ep, "--shard", string(rune('0'+k))+"/3", "--resume", "-q")
		if r.code != 0 || !strings.Contains(r.err, "shard-"+string(rune('0'+k))+"-of-3.jsonl") {
			t.Fatalf("shard %d: %+v", k, r)
		}
	}
	one := filepath.Join(dir, "one.jsonl")
	if r := run(t, "matrix", "-c", cfg, "-o", one, "-q"); r.code != 0 {
		t.Fatalf("one machine: %+v", r)
	}
	all := filepath.Join(dir, "all.jsonl")
	r := run(t, "merge", prefix, "--s3-endpoint", ep, "-o", all, "--config", cfg)
	if r.code != 0 || !strings.Contains(r.err, "coverage: 120 of 120 planned cells, 0 missing, 0 results not in the plan") {
		t.Fatalf("merge: %+v", r)
	}
	want, got := keysOf(t, one), keysOf(t, all)
	if len(got) != len(want) {
		t.Errorf("merged %d keys, one machine %d", len(got), len(want))
	}
	for k, n := range got {
		if n != 1 || want[k] != 1 {
			t.Errorf("key %s: %d merged, %d on one machine", k, n, want[k])
		}
	}
	a := run(t, "report", prefix, "--s3-endpoint", ep, "--format", "json")
	b := run(t, "report", one, "--format", "json")
	if a.code != 0 || a.out != b.out || !strings.Contains(a.out, `"n": 120,`) {
		t.Errorf("report of the prefix differs from one machine's:\n%s\n%s\n%s", a.out, b.out, a.err)
	}
	if r := run(t, "gate", prefix, "--s3-endpoint", ep, "--max-asr", "1"); r.code != 0 {
		t.Errorf("gate: %+v", r)
	}
	// compare reads a prefix as a file: no cell flips against itself.
	a = run(t, "compare", one, prefix, "--s3-endpoint", ep, "--format", "json")
	if a.code != 0 || !strings.Contains(a.out, `"flips": []`) || !strings.Contains(a.out, `"n": 120,`) {
		t.Errorf("compare one machine with the prefix: %+v", a)
	}
	// Run again: refused without --resume; with it, nothing to do.
	if r := run(t, "matrix", "-c", cfg, "-o", prefix, "--s3-endpoint", ep, "--shard", "2/3"); r.code != ExitUsage || !strings.Contains(r.err, "--resume continues it") {
		t.Errorf("second run without --resume: %+v", r)
	}
	r = run(t, "matrix", "-c", cfg, "-o", prefix, "--s3-endpoint", ep, "--shard", "2/3", "--resume", "-q")
	if r.code != 0 || !strings.Contains(r.err, "cells done") || !strings.Contains(r.err, "0/0 cells run") {
		t.Errorf("resume of a finished shard: %+v", r)
	}
	// Another split under the same prefix is refused.
	if r := run(t, "matrix", "-c", cfg, "-o", prefix, "--s3-endpoint", ep, "--shard", "1/4", "--resume"); r.code != ExitUsage || !strings.Contains(r.err, "keep one run per prefix") {
		t.Errorf("a run of 4 under a run of 3: %+v", r)
	}
}

// A dataset run writes to a prefix as a config run does.
func TestS3DatasetRun(t *testing.T) {
	ep := fakeBucket(t)
	r := run(t, "dataset", "run", "direct_injection", "-o", "s3://results/ds/", "--s3-endpoint", ep, "--shard", "1/2", "-q")
	if r.code != 0 || !strings.Contains(r.err, "s3://results/ds/shard-1-of-2.jsonl") {
		t.Fatalf("dataset run to s3: %+v", r)
	}
	r = run(t, "report", "s3://results/ds/", "--s3-endpoint", ep, "--format", "json")
	if r.code != 0 || !strings.Contains(r.err, "shard 2 of 2 has not finished") || !strings.Contains(r.out, `"cells": `) {
		t.Errorf("report of half a dataset run: %+v", r)
	}
}

// A gate over a run with a shard missing fails; report and merge warn
// and read what is there.
func TestS3GateFailsOnUnfinishedRun(t *testing.T) {
	ep := fakeBucket(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	const prefix = "s3://results/partial"
	for _, k := range []string{"1", "3"} {
		if r := run(t, "matrix", "-c", cfg, "-o", prefix, "--s3-endpoint", ep, "--shard", k+"/3", "-q"); r.code != 0 {
			t.Fatalf("%+v", r)
		}
	}
	r := run(t, "gate", prefix, "--s3-endpoint", ep, "--max-asr", "1")
	if r.code != ExitFailed || !strings.Contains(r.out, "FAIL s3://results/partial/: shard 2 of 3 has not finished") {
		t.Errorf("gate over an unfinished run: %+v", r)
	}
	r = run(t, "report", prefix, "--s3-endpoint", ep)
	if r.code != 0 || !strings.Contains(r.err, "warning: s3://results/partial/: shard 2 of 3 has not finished") {
		t.Errorf("report over an unfinished run: %+v", r)
	}
	if r := run(t, "gate", "s3://results/empty/", "--s3-endpoint", ep, "--max-asr", "1"); r.code == 0 || !strings.Contains(r.err, "no pikit results there") {
		t.Errorf("gate over an empty prefix: %+v", r)
	}
}

func TestS3FlagErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"matrix", "-c", cfg, "--s3-endpoint", "http://127.0.0.1:1"}, "--s3-endpoint applies to s3:// locations"},
		{[]string{"matrix", "-c", cfg, "-o", filepath.Join(dir, "x.jsonl"), "--s3-flush", "1s"}, "--s3-flush applies to s3:// locations"},
		{[]string{"matrix", "-c", cfg, "-o", "s3://results/x/", "--s3-flush", "1ms"}, "--s3-flush: want a duration"},
		{[]string{"matrix", "-c", cfg, "-o", "s3://results/x/", "--s3-endpoint", "http://u:p@h:1"}, "no user info"},
		{[]string{"matrix", "-c", cfg, "-o", "s3://results/x.jsonl"}, "not one results file"},
		{[]string{"matrix", "-c", cfg, "-o", "s3://results/x/", "--repeat-summary"}, "holds JSONL results"},
		{[]string{"report", filepath.Join(dir, "x.jsonl"), "--s3-endpoint", "http://127.0.0.1:1"}, "applies to s3:// locations"},
		{[]string{"merge", "s3://results/x/", "-o", "s3://results/y/"}, "merge writes a local .jsonl file"},
	} {
		r := run(t, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, c.want) {
			t.Errorf("%v: %+v, want exit 2 and %q", c.args, r, c.want)
		}
	}
}

// --dry-run says where the results would go, and contacts nothing.
func TestS3DryRun(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://user:pw@127.0.0.1:1")
	cfg := writeFile(t, t.TempDir(), "exp.toml", bigConfig)
	r := run(t, "matrix", "-c", cfg, "-o", "s3://results/dry/", "--shard", "2/4", "--dry-run")
	want := "s3://results/dry/shard-2-of-4.jsonl at http://127.0.0.1:1 (AWS_ENDPOINT_URL_S3), in parts every 5s"
	if r.code != 0 || !strings.Contains(r.out, want) || strings.Contains(r.out+r.err, "pw@") {
		t.Errorf("dry run: %+v, want %q", r, want)
	}
}

// A .env file may not move the S3 endpoint for the user's own
// credentials, nor choose where credentials come from.
func TestS3DotEnvRefusal(t *testing.T) {
	for _, c := range []struct {
		aws      []string
		endpoint string
		trust    bool
		refused  string
	}{
		{aws: []string{"AWS_ENDPOINT_URL_S3"}, refused: "AWS_ENDPOINT_URL_S3"},
		{aws: []string{"AWS_ENDPOINT_URL"}, refused: "AWS_ENDPOINT_URL"},
		{aws: []string{"AWS_ACCESS_KEY_ID", "AWS_ENDPOINT_URL_S3", "AWS_SECRET_ACCESS_KEY"}},
		{aws: []string{"AWS_ENDPOINT_URL_S3"}, endpoint: "http://127.0.0.1:9000"},
		{aws: []string{"AWS_ENDPOINT_URL_S3"}, trust: true},
		{aws: []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_CONTAINER_CREDENTIALS_FULL_URI"}, refused: "AWS_CONTAINER_CREDENTIALS_FULL_URI"},
		{aws: []string{"AWS_SHARED_CREDENTIALS_FILE"}, refused: "AWS_SHARED_CREDENTIALS_FILE"},
		{aws: []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"}},
	} {
		s := s3Options{Endpoint: c.endpoint}
		err := s.s3Refusal(dotEnv{path: ".env", aws: c.aws}, c.trust)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%v: refused: %v", c.aws, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), ".env sets "+c.refused)):
			t.Errorf("%v: %v, want a refusal naming %s", c.aws, err, c.refused)
		}
	}
	// Through the command: the .env loaded at start-up.
	ep := fakeBucket(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	env, err := loadDotEnv(writeFile(t, dir, ".env", "AWS_ENDPOINT_URL_S3="+ep+"\n"), io.Discard)
	if err != nil || len(env.aws) != 1 {
		t.Fatalf("loading the .env: %v %+v", err, env)
	}
	r := runCtx(t, withDotEnv(context.Background(), env), "matrix", "-c", cfg, "-o", "s3://results/dotenv/")
	if r.code != ExitUsage || !strings.Contains(r.err, ".env sets AWS_ENDPOINT_URL_S3") || strings.Contains(r.err, "cli-test-secret") {
		t.Errorf("a .env's endpoint: %+v", r)
	}
}

// A store that refuses uploads stops the run (exit 1, saying where);
// nothing is claimed written, and --resume goes on once it accepts them.
func TestS3UploadFailureStopsTheRun(t *testing.T) {
	ep := fakeBucket(t)
	var refuse atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() && r.Method == http.MethodPut {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>no writes</Message></Error>`)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, ep+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		req.ContentLength = r.ContentLength
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	refuse.Store(true)
	r := run(t, "matrix", "-c", cfg, "-o", "s3://results/refused/", "--s3-endpoint", proxy.URL, "-q")
	if r.code != ExitFailed || !strings.Contains(r.err, "AccessDenied") || strings.Contains(r.err, "results: s3://") || !strings.Contains(r.err, "s3://results/refused/") || strings.Contains(r.err, "cli-test-secret") {
		t.Errorf("uploads refused: %+v", r)
	}
	refuse.Store(false)
	r = run(t, "matrix", "-c", cfg, "-o", "s3://results/refused/", "--s3-endpoint", proxy.URL, "-q", "--resume")
	if r.code != 0 || !strings.Contains(r.err, "shard 1 of 1: 120 results") {
		t.Errorf("resumed once the store takes writes: %+v", r)
	}
}
