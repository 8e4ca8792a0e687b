package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
)

// TestMCPServeRefusesWebPages: pikit mcp serve over HTTP answers an
// agent on this machine, and refuses what a web page in the user's
// browser could send: a foreign Origin, a foreign Host (DNS rebinding).
func TestMCPServeRefusesWebPages(t *testing.T) {
	url, _, stop := startMCPServe(t)
	ctx := context.Background()
	port := regexp.MustCompile(`:(\d+)/mcp$`).FindStringSubmatch(url)[1]
	tests := []struct {
		name   string
		host   string
		origin string
		want   int
	}{
		{name: "a page elsewhere", origin: "https://evil.example", want: http.StatusForbidden},
		{name: "DNS rebinding", host: "rebind.evil.example:" + port, origin: "http://rebind.evil.example:" + port, want: http.StatusForbidden},
		{name: "an agent on this machine", want: http.StatusOK},
		{name: "a page on this machine", host: "localhost:" + port, origin: "http://localhost:" + port, want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, b)
			}
			if tt.want == http.StatusForbidden && !strings.Contains(string(b), "refuses") {
				t.Errorf("the refusal does not say why: %s", b)
			}
		})
	}
	stop()
}

// TestMCPRunAgentLogsPlantedLinks: the cell keys are whoever wrote the
// config's to compute, and they name the --agent-logs files; a symlink
// planted as DIR/KEY.stdout or DIR/KEY.stderr is never written through.
// The cell says why it did not run, and a --resume, once the link is
// gone, replaces the cell's own earlier log and runs it.
func TestMCPRunAgentLogsPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", strings.Replace(mcpConfig, `channels = ["", "markdown"]`, `channels = [""]`, 1))
	args := []string{"mcp", "run", "--config", cfg, "--attacks", "naive", "-q"}
	// A first run, elsewhere, gives the cell's key.
	first := filepath.Join(dir, "first.jsonl")
	if r := run(t, append(append(args, "-o", first), mcpAgentCommand()...)...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.err)
	}
	key := readResults(t, first)[0].Key
	for _, ext := range []string{".stdout", ".stderr"} {
		t.Run("a symlink as KEY"+ext, func(t *testing.T) {
			victim := writeFile(t, t.TempDir(), "victim", "keep me")
			logs := filepath.Join(t.TempDir(), "logs")
			if err := os.Mkdir(logs, 0o755); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(logs, key+ext)
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "results.jsonl")
			withLogs := append(args, "-o", out, "--agent-logs", logs)
			r := run(t, append(withLogs, mcpAgentCommand()...)...)
			if b, _ := os.ReadFile(victim); string(b) != "keep me" {
				t.Fatalf("the victim now holds %q", b)
			}
			if r.code != 1 {
				t.Fatalf("exit %d, want 1 (a cell failed)\n%s", r.code, r.err)
			}
			res := readResults(t, out)
			if len(res) != 1 || res[0].Outcome != judge.RuntimeError || !strings.Contains(res[0].Error, link+": already exists") {
				t.Fatalf("results %+v; want a runtime error naming %s", res, link)
			}
			// The link removed, --resume runs the cell, replacing the
			// log the first attempt created (its own).
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			r = run(t, append(append(withLogs, "--resume"), mcpAgentCommand()...)...)
			if r.code != 0 {
				t.Fatalf("resume: exit %d\n%s", r.code, r.err)
			}
			if b, err := os.ReadFile(filepath.Join(logs, key+".stdout")); err != nil || !strings.Contains(string(b), "listed") {
				t.Errorf("the resumed cell's log: %q, %v", b, err)
			}
		})
	}
}
