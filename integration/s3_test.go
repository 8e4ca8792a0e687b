package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/objstore"
	"github.com/pikit-go/pikit/report"
)

// motoVenv holds moto's standalone S3 server, failing the suite under
// PIKIT_REQUIRE_S3=1, as .ci/run sets it.
var motoVenv = &venv{name: "moto-venv", env: "PIKIT_MOTO_VENV", requirements: filepath.Join("testdata", "s3", "requirements.txt"),
	suite: "object-storage", require: "PIKIT_REQUIRE_S3"}

// asPikit makes the test binary run the pikit CLI (see TestMain): the
// suite starts shards as processes of their own, as a Job's pods are.
const asPikit = "PIKIT_INTEGRATION_AS_PIKIT"

const s3Bucket = "pikit-results"

// startMoto starts moto's S3 server on a free 127.0.0.1 port with the
// bucket made, and returns its endpoint; it stops with the test.
func startMoto(t *testing.T) string {
	t.Helper()
	py := motoVenv.python(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(filepath.Join(filepath.Dir(py), "moto_server"), "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ep := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodPut, ep+"/"+s3Bucket, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto did not answer in 60s: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "moto-test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "moto-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // never ask an instance for credentials
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ENDPOINT_URL_S3", ep)
	return ep
}

// fakeModel is an OpenAI-compatible chat endpoint that answers after a
// fixed delay: half the prompts (by hash) echoed, the rest refused, the
// same answer for the same prompt. It counts the requests.
type fakeModel struct {
	delay    time.Duration
	requests atomic.Int64
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.requests.Add(1)
	var req struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	time.Sleep(m.delay)
	last := fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
	h := fnv.New32a()
	h.Write([]byte(last))
	reply := "I can only help with the task I was given."
	if h.Sum32()%2 == 0 {
		reply = "Sure. " + last
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": reply}}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

// shardPlan is a plan of chat cells (one model request each).
const shardPlan = `[target]
spec = "openai:fake"
[matrix]
attacks = ["naive", "escape", "context_ignoring", "fake_completion", "combined"]
defenses = ["none", "sandwich", "spotlighting", "delimiters"]
agents = ["chat"]
repeats = %d
`

// pikitProc starts the test binary as pikit with args.
func pikitProc(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), asPikit+"=1", "OPENAI_API_KEY=fake-key"), env...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &errOut
}

// modelArgs point a run at the fake model.
func modelArgs(url string, j int) []string {
	return []string{"--base-url", url + "/v1", "-j", strconv.Itoa(j), "-q", "--yes"}
}

// storedKeys reads what a prefix holds now: key → lines.
func storedKeys(t *testing.T, prefix string) map[string]int {
	t.Helper()
	ctx := context.Background()
	st, err := objstore.Open(ctx, objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := objstore.ParseURL(prefix)
	p, err := st.Inspect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	rc := st.Open(ctx, p)
	defer rc.Close()
	keys := map[string]int{}
	if _, err := report.ScanKeys(rc, func(li report.LineInfo) error { keys[li.Key]++; return nil }); err != nil {
		t.Fatal(err)
	}
	return keys
}

func fileKeys(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]int{}
	if _, err := report.ScanKeys(f, func(li report.LineInfo) error { keys[li.Key]++; return nil }); err != nil {
		t.Fatal(err)
	}
	return keys
}

// sameKeys fails unless a and b hold the same keys, each once.
func sameKeys(t *testing.T, what string, a, b map[string]int) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s: %d keys, want %d", what, len(a), len(b))
	}
	for k, n := range a {
		if n != 1 {
			t.Errorf("%s: key %s %d times", what, k, n)
		}
		if b[k] != 1 {
			t.Errorf("%s: key %s not in the one-machine run", what, k)
		}
	}
}

// shardSetup starts moto and a model answering after delay, writes the
// plan with repeats, and runs it on one machine (one process) into
// one.jsonl, the reference every sharded run must equal.
func shardSetup(t *testing.T, delay time.Duration, repeats int) (model *fakeModel, srv *httptest.Server, dir, cfg, one string) {
	t.Helper()
	startMoto(t)
	model = &fakeModel{delay: delay}
	srv = httptest.NewServer(model)
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	cfg = filepath.Join(dir, "exp.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(shardPlan, repeats)), 0o644); err != nil {
		t.Fatal(err)
	}
	one = filepath.Join(dir, "one.jsonl")
	cmd, errOut := pikitProc(t, nil, append([]string{"matrix", "-c", cfg, "-o", one}, modelArgs(srv.URL, 8)...)...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("one machine: %v\n%s", err, errOut)
	}
	return model, srv, dir, cfg, one
}

// TestS3ShardsAsAJob runs one plan as an Indexed Job would: N pikit
// processes, each given JOB_COMPLETION_INDEX 0…N−1, writing to one
// prefix of a real S3-compatible server (moto) and calling one model;
// merge, report and gate over the prefix equal the same plan run on one
// machine. It logs the run's cells per second for 1, 2 and 4 shards.
func TestS3ShardsAsAJob(t *testing.T) {
	_, srv, dir, cfg, one := shardSetup(t, 20*time.Millisecond, 60) // 5 × 4 × 60 = 1,200 cells
	want := fileKeys(t, one)
	if len(want) != 1200 {
		t.Fatalf("the one-machine run has %d cells, want 1200", len(want))
	}
	wantReport, _ := pikit(t, "report", one, "--format", "json")
	for _, n := range []int{1, 2, 4} {
		prefix := fmt.Sprintf("s3://%s/job-%d/", s3Bucket, n)
		start := time.Now()
		var procs []*exec.Cmd
		var logs []*bytes.Buffer
		for i := range n {
			cmd, errOut := pikitProc(t, []string{"JOB_COMPLETION_INDEX=" + strconv.Itoa(i)},
				append([]string{"matrix", "-c", cfg, "--shard", fmt.Sprintf("auto/%d", n), "--resume", "-o", prefix}, modelArgs(srv.URL, 8)...)...)
			procs, logs = append(procs, cmd), append(logs, errOut)
		}
		for i, p := range procs {
			if err := p.Wait(); err != nil {
				t.Fatalf("%d shards: shard %d: %v\n%s", n, i+1, err, logs[i])
			}
		}
		took := time.Since(start)
		t.Logf("%d shard processes (-j 8 each, a model answering in 20 ms): 1200 cells in %v, %.0f cells/s", n, took.Round(time.Millisecond), 1200/took.Seconds())
		sameKeys(t, prefix, storedKeys(t, prefix), want)
		pikit(t, "gate", prefix, "--max-asr", "1")
		all := filepath.Join(dir, fmt.Sprintf("all-%d.jsonl", n))
		_, merged := pikit(t, "merge", prefix, "-o", all, "--config", cfg)
		if !strings.Contains(merged, "coverage: 1200 of 1200 planned cells, 0 missing, 0 results not in the plan") {
			t.Errorf("merge of %d shards: %s", n, merged)
		}
		sameKeys(t, all, fileKeys(t, all), want)
		if got, _ := pikit(t, "report", prefix, "--format", "json"); got != wantReport {
			t.Errorf("report of %d shards differs from one machine's:\n%s\nwant\n%s", n, got, wantReport)
		}
	}
}

var resumedRE = regexp.MustCompile(`resuming \S+: (\d+) cells done`)

// TestS3ShardKilledResumes kills shard 1 of 2 mid-run (SIGKILL: its
// buffered results are lost) and stops shard 2 with SIGTERM (as
// Kubernetes does: every finished cell is uploaded); each restarted with
// --resume loses no cell and repeats none that was stored, and the two
// shards merge into the one-machine run.
func TestS3ShardKilledResumes(t *testing.T) {
	model, srv, _, cfg, one := shardSetup(t, 30*time.Millisecond, 40) // 800 cells
	want := fileKeys(t, one)
	prefix := "s3://" + s3Bucket + "/killed/"
	ctx := context.Background()
	st, err := objstore.Open(ctx, objstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := objstore.ParseURL(prefix)
	for k, sig := range []syscall.Signal{1: syscall.SIGKILL, 2: syscall.SIGTERM} {
		if k == 0 {
			continue
		}
		sh := objstore.Shard{K: k, N: 2}
		args := append([]string{"matrix", "-c", cfg, "--shard", fmt.Sprintf("%d/2", k), "--resume", "-o", prefix, "--s3-flush", "200ms"}, modelArgs(srv.URL, 4)...)
		cmd, errOut := pikitProc(t, nil, args...)
		// Wait for three parts (about 0.6 s of results), then stop it.
		deadline := time.Now().Add(30 * time.Second)
		for {
			p, err := st.Inspect(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if s := p.Shard(sh); len(s.Parts) >= 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no three parts after 30s\n%s", sh, errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		stored := storedKeys(t, prefix)
		if sig == syscall.SIGTERM {
			// Every cell that finished is stored: the count the run
			// printed is the count on the store.
			m := regexp.MustCompile(`interrupted after (\d+) of`).FindStringSubmatch(errOut.String())
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || m == nil {
				t.Fatalf("SIGTERM: %v\n%s", err, errOut)
			}
			if n, _ := strconv.Atoi(m[1]); n != shardCount(t, stored, k) {
				t.Errorf("SIGTERM: the run finished %d cells, the store holds %d of the shard", n, shardCount(t, stored, k))
			}
		}
		before := model.requests.Load()
		cmd, errOut = pikitProc(t, nil, args...)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s resumed: %v\n%s", sh, err, errOut)
		}
		m := resumedRE.FindStringSubmatch(errOut.String())
		if m == nil {
			t.Fatalf("%s resumed without saying so:\n%s", sh, errOut)
		}
		done, _ := strconv.Atoi(m[1])
		after := storedKeys(t, prefix)
		shardCells := shardCount(t, after, k)
		if done != shardCount(t, stored, k) {
			t.Errorf("%s: resumed with %d done, the store held %d", sh, done, shardCount(t, stored, k))
		}
		// Every model request of the resumed run is a cell that was not
		// stored: none stored is run again, none is lost.
		if sent := model.requests.Load() - before; sent != int64(shardCells-done) {
			t.Errorf("%s (%v): the resumed run sent %d requests for %d cells not stored (of %d)", sh, sig, sent, shardCells-done, shardCells)
		}
		t.Logf("%s stopped by %v with %d of its %d cells stored; resumed, it ran the other %d", sh, sig, done, shardCells, shardCells-done)
	}
	sameKeys(t, prefix, storedKeys(t, prefix), want)
	pikit(t, "gate", prefix, "--max-asr", "1")
	want1, _ := pikit(t, "report", one, "--format", "json")
	if got, _ := pikit(t, "report", prefix, "--format", "json"); got != want1 {
		t.Errorf("report of the resumed shards differs from one machine's:\n%s\nwant\n%s", got, want1)
	}
}

// shardCount counts the keys of shard k of 2 in keys.
func shardCount(t *testing.T, keys map[string]int, k int) int {
	t.Helper()
	n := 0
	for key := range keys {
		if matrix.Shard(key, 2) == k-1 {
			n++
		}
	}
	return n
}
