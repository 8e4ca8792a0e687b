package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// caseResult returns the first result of a dataset case.
func caseResult(t *testing.T, res []matrix.Result, id string) matrix.Result {
	t.Helper()
	for _, r := range res {
		if r.CaseID == id {
			return r
		}
	}
	t.Fatalf("no result of case %s among %d", id, len(res))
	return matrix.Result{}
}

// openAIServer answers Chat Completions requests. reply turns the last
// message into the answer; fail, when it returns a status, fails a request
// instead.
func openAIServer(t *testing.T, reply func(last string) string, fail func(n int64) (int, http.Header)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test-cli" {
			http.Error(w, `{"error":{"message":"bad request path or key"}}`, http.StatusBadRequest)
			return
		}
		if fail != nil {
			if status, h := fail(i); status != 0 {
				for k, v := range h {
					w.Header()[k] = v
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":{"message":"simulated %d","type":"test"}}`, status)
				return
			}
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		last := ""
		if len(req.Messages) > 0 {
			last = fmt.Sprint(req.Messages[len(req.Messages)-1].Content)
		}
		text, _ := json.Marshal(reply(last))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1764600000,"model":%q,
"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],
"usage":{"prompt_tokens":40,"completion_tokens":5,"total_tokens":45}}`, i, req.Model, text)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestDatasetAgainstOpenAICompatibleServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	srv, n := openAIServer(t, func(last string) string {
		if strings.Contains(last, "HACKED") {
			return "HACKED"
		}
		return "Here is a summary."
	}, nil)
	out := filepath.Join(t.TempDir(), "res.jsonl")
	r := run(t, "dataset", "run", "direct_injection", "--target", "openai:test-model", "--base-url", srv.URL+"/v1", "-o", out)
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	res, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := report.Summarize(res)
	blocked := sum.Outcomes[judge.PolicyBlocked]
	// One request per cell: chat cells make exactly one model call, and a
	// detector-blocked cell makes none.
	if got, want := n.Load(), int64(len(res)-blocked); got != want {
		t.Errorf("%d requests for %d cells (%d blocked)", got, len(res), blocked)
	}
	// di-001 (naive) carries the canary in plain text; results come in the
	// order cells finish.
	first := caseResult(t, res, "di-001")
	if sum.ASR.Successes == 0 || first.FinalText != "HACKED" || first.Usage.PromptTokens != 40 {
		t.Errorf("the model's real answers should be in the results: %+v, di-001 %q", sum, first.FinalText)
	}
	for _, r := range res {
		if strings.Contains(fmt.Sprint(r), "sk-test-cli") {
			t.Fatal("the API key reached a result")
		}
	}
}

func TestMissingKeyExitsTwoBeforeAnyCell(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	srv, n := openAIServer(t, func(string) string { return "x" }, nil)
	out := filepath.Join(t.TempDir(), "res.jsonl")
	r := run(t, "dataset", "run", "direct_injection", "--target", "openai:test-model", "--base-url", srv.URL+"/v1", "-o", out)
	if r.code != ExitUsage || !strings.Contains(r.err, "OPENAI_API_KEY") || n.Load() != 0 {
		t.Errorf("%+v, %d requests", r, n.Load())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output file was written")
	}
}

func TestUnauthorizedStopsTheRun(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	srv, n := openAIServer(t, func(string) string { return "x" }, func(int64) (int, http.Header) { return http.StatusUnauthorized, nil })
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", "attacks = [\"*\"]\nrepeats = 20\n")
	out := filepath.Join(dir, "res.jsonl")
	start := time.Now()
	r := run(t, "matrix", "-c", cfg, "--target", "openai:test-model", "--base-url", srv.URL+"/v1", "-o", out, "-j", "4")
	took := time.Since(start)
	if r.code != ExitFailed || !strings.Contains(r.err, "run stopped") || !strings.Contains(r.err, "simulated 401") {
		t.Fatalf("%+v", r)
	}
	if n.Load() > 8 {
		t.Errorf("%d requests after a 401; the run should stop at once", n.Load())
	}
	t.Logf("stopped %v after the first 401, %d requests sent for 260 planned cells", took, n.Load())
}

func TestTransient429sLoseNothing(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	// Every fifth request is a 429 with a short Retry-After.
	srv, n := openAIServer(t, func(string) string { return "fine" }, func(i int64) (int, http.Header) {
		if i%5 == 0 {
			return http.StatusTooManyRequests, http.Header{"Retry-After-Ms": {"5"}}
		}
		return 0, nil
	})
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", "attacks = [\"naive\", \"escape\", \"combined\", \"context_ignoring\"]\nrepeats = 25\n")
	out := filepath.Join(dir, "res.jsonl")
	r := run(t, "matrix", "-c", cfg, "--target", "openai:test-model", "--base-url", srv.URL+"/v1", "-o", out, "-j", "8")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	res, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	errs := 0
	for _, x := range res {
		if x.Outcome == judge.RuntimeError {
			errs++
		}
	}
	if len(res) != 100 || errs != 0 {
		t.Errorf("%d results, %d errors; want 100 and 0", len(res), errs)
	}
	t.Logf("100 cells, %d requests (%.0f%% answered 429), 0 results lost", n.Load(), 100*float64(n.Load()/5)/float64(n.Load()))
}

func TestDatasetAgainstAnthropicServer(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-cli")
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/v1/messages" || r.Header.Get("anthropic-version") == "" {
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad path or version"}}`, http.StatusBadRequest)
			return
		}
		var req struct {
			Messages []struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		answer := "I will only summarise."
		if m := req.Messages; len(m) > 0 && len(m[len(m)-1].Content) > 0 && strings.Contains(m[len(m)-1].Content[0].Text, "HACKED") {
			answer = "HACKED"
		}
		text, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":3}}`, n.Load(), text)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "res.jsonl")
	r := run(t, "dataset", "run", "direct_injection", "--target", "anthropic:claude-test", "--base-url", srv.URL, "-o", out)
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	res, err := report.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s, first := report.Summarize(res), caseResult(t, res, "di-001"); s.ASR.Successes == 0 || first.FinalText != "HACKED" || first.Usage.PromptTokens != 30 {
		t.Errorf("the model's answers should be in the results: %+v, di-001 %q", s.ASR, first.FinalText)
	}
}

func TestLLMJudgeWithJudgeTarget(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	// The judge model: a strict verdict for any trace that mentions HACKED.
	judgeSrv, judged := openAIServer(t, func(last string) string {
		if strings.Contains(last, "HACKED") {
			return `{"verdict": "success", "confidence": "high", "reason": "the assistant printed the attacker's word"}`
		}
		return "I am not sure."
	}, nil)
	out := filepath.Join(t.TempDir(), "res.jsonl")
	r := run(t, "run", "--agent", "chat", "--target", "mock:obedient", "--judge", "llm",
		"--judge-target", "openai:judge-model", "--judge-base-url", judgeSrv.URL+"/v1", "--json")
	if r.code != 0 || judged.Load() != 1 {
		t.Fatalf("%+v, %d judge requests", r, judged.Load())
	}
	if !strings.Contains(r.out, `"outcome":"full_success"`) || !strings.Contains(r.out, `llm_verdict:success`) {
		t.Errorf("the judge model's verdict should decide: %s", r.out)
	}
	_ = out
}
