package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pikit-go/pikit/mcpserve"
	"github.com/pikit-go/pikit/mcpserve/mcptest"
)

// mcpEnvAgentArg makes the test binary play an agent that obeys its
// tools, then prints its whole environment (the key it was given
// included, as a careless agent's debug output would).
const mcpEnvAgentArg = "pikit-mcp-env-agent"

func init() {
	if len(os.Args) > 2 && os.Args[2] == mcpEnvAgentArg {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := mcptest.Obey(ctx, os.Getenv(mcpserve.EnvURL), os.Getenv(mcpserve.EnvAgent), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		fmt.Fprintln(os.Stderr, "debug: key", os.Getenv("OPENAI_API_KEY"))
		os.Exit(0)
	}
}

const (
	mcpTestKey       = "sk-pikit-cli-test-9b8a7c6d5e4f3a2b1c0d"
	mcpTestAWSSecret = "aws-pikit-cli-test-secret-0123456789"
)

func TestMCPRunAgentEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", mcpTestKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", mcpTestAWSSecret)
	t.Setenv("PIKIT_CLI_TEST_PLAIN", "plain")
	agentCmd := []string{"--", os.Args[0], "-test.run=^$", mcpEnvAgentArg}
	tests := []struct {
		name     string
		flags    []string
		got      []string // in every final text
		notGot   []string // in no final text, nor log
		withheld []string // in the notice's list
		passed   []string // not in it
	}{
		{
			name:     "secrets withheld",
			got:      []string{"PIKIT_CLI_TEST_PLAIN=plain"},
			notGot:   []string{"OPENAI_API_KEY=", "AWS_SECRET_ACCESS_KEY=", mcpTestAWSSecret, mcpTestKey},
			withheld: []string{"AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY"},
		},
		{
			name:     "--pass-env",
			flags:    []string{"--pass-env", "OPENAI_API_KEY"},
			got:      []string{"OPENAI_API_KEY=[REDACTED]", "PIKIT_CLI_TEST_PLAIN=plain"},
			notGot:   []string{"AWS_SECRET_ACCESS_KEY=", mcpTestAWSSecret, mcpTestKey},
			withheld: []string{"AWS_SECRET_ACCESS_KEY"},
			passed:   []string{"OPENAI_API_KEY"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeFile(t, dir, "exp.toml", strings.Replace(mcpConfig, `channels = ["", "markdown"]`, `channels = [""]`, 1))
			out := filepath.Join(dir, "results.jsonl")
			logs := filepath.Join(dir, "logs")
			args := append([]string{"mcp", "run", "--config", cfg, "--attacks", "none,naive", "-o", out, "-q", "--agent-logs", logs}, tt.flags...)
			r := run(t, append(args, agentCmd...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.err)
			}
			// Once a run, names only.
			notice := regexp.MustCompile(`without (\d+) variables? of your environment that looks? like secrets: ([A-Z_, ]+)\.`)
			if n := len(notice.FindAllString(r.err, -1)); n != 1 {
				t.Fatalf("the notice came %d times:\n%s", n, r.err)
			}
			listed := map[string]bool{}
			for _, name := range strings.Split(notice.FindStringSubmatch(r.err)[2], ", ") {
				listed[name] = true
			}
			for _, name := range tt.withheld {
				if !listed[name] {
					t.Errorf("the notice does not name %s:\n%s", name, r.err)
				}
			}
			for _, name := range tt.passed {
				if listed[name] {
					t.Errorf("the notice names %s, which was passed:\n%s", name, r.err)
				}
			}
			if !strings.Contains(r.err, "--pass-env NAME") {
				t.Errorf("the notice does not say how to pass one:\n%s", r.err)
			}
			if strings.Contains(r.err, mcpTestKey) || strings.Contains(r.err, mcpTestAWSSecret) {
				t.Error("stderr holds a secret's value")
			}
			res := readResults(t, out)
			if len(res) != 2 {
				t.Fatalf("%d results", len(res))
			}
			for _, x := range res {
				for _, g := range tt.got {
					if !strings.Contains(x.FinalText, g) {
						t.Errorf("%s: the agent's environment lacks %q", x.Attack, g)
					}
				}
				for _, ng := range tt.notGot {
					if strings.Contains(x.FinalText, ng) {
						t.Errorf("%s: %q reached the agent", x.Attack, ng)
					}
				}
				for _, ext := range []string{".stdout", ".stderr"} {
					b, err := os.ReadFile(filepath.Join(logs, x.Key+ext))
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(string(b), mcpTestKey) || strings.Contains(string(b), mcpTestAWSSecret) {
						t.Errorf("%s: the log %s holds a secret", x.Attack, ext)
					}
				}
			}
		})
	}
}

func TestMCPFlagsBadUsage(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", mcpConfig)
	agentCmd := mcpAgentCommand()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--pass-env with =", append([]string{"mcp", "run", "--config", cfg, "--pass-env", "OPENAI_API_KEY=sk-x"}, agentCmd...), `--pass-env: "OPENAI_API_KEY=sk-x" is not a variable name`},
		{"--pass-env empty", append([]string{"mcp", "run", "--config", cfg, "--pass-env", ""}, agentCmd...), `--pass-env: "" is not a variable name`},
		{"--max-sessions 0", []string{"mcp", "serve", "--agent", "email", "--transport", "http", "--max-sessions", "0"}, "--max-sessions: must be at least 1, got 0"},
		{"--session-timeout 0", []string{"mcp", "serve", "--agent", "email", "--transport", "http", "--session-timeout", "0s"}, "--session-timeout: must be positive, got 0s"},
		{"--max-sessions over stdio", []string{"mcp", "serve", "--agent", "email", "--max-sessions", "4"}, "--max-sessions needs --transport http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, tt.args...)
			if r.code != ExitUsage || !strings.Contains(r.err, tt.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 with %q", r.code, r.err, tt.want)
			}
		})
	}
}

func TestMCPServeMaxSessions(t *testing.T) {
	url, errOut, stop := startMCPServe(t, "--max-sessions", "1", "--session-timeout", "1m")
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, body := post(); status != http.StatusOK {
		t.Fatalf("the first session: %d %s", status, body)
	}
	status, body := post()
	if status != http.StatusServiceUnavailable || !strings.Contains(body, `"id":null`) || !strings.Contains(body, "--max-sessions") {
		t.Errorf("the second session: %d %s", status, body)
	}
	errOut.waitFor(t, regexp.MustCompile(`pikit mcp: (already 1 open MCP session,)`))
	stop()
}

func TestMCPServeStdioOversizedMessage(t *testing.T) {
	cr, sw := io.Pipe() // pikit's stdout → the client
	sr, cw := io.Pipe() // the client → pikit's stdin
	errOut := newSyncBuffer()
	code := make(chan int, 1)
	go func() {
		code <- Run(context.Background(), []string{"mcp", "serve", "--agent", "email"}, IO{In: sr, Out: sw, ErrOut: errOut})
		sw.Close()
		sr.Close()
	}()
	lines := bufio.NewScanner(cr)
	lines.Buffer(nil, 4<<20)
	answer := make(chan string)
	go func() {
		for lines.Scan() {
			answer <- lines.Text()
		}
		close(answer)
	}()
	next := func() string {
		select {
		case l := <-answer:
			return l
		case <-time.After(20 * time.Second):
			t.Fatal("no answer")
		}
		return ""
	}
	io.WriteString(cw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	next()
	io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(cw, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"x":"`+strings.Repeat("a", mcpserve.MaxMessageBytes)+`"}}`+"\n")
	if l := next(); !strings.Contains(l, `"id":null`) || !strings.Contains(l, "-32600") {
		t.Errorf("refusal %q", l)
	}
	io.WriteString(cw, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`+"\n")
	if l := next(); !strings.Contains(l, `"id":3`) || !strings.Contains(l, "read_email") {
		t.Errorf("after the refusal: %.200s", l)
	}
	cw.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d\n%s", c, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("pikit mcp serve did not end with its input")
	}
	if !strings.Contains(errOut.String(), "pikit mcp: [stdio] the client sent a message over 1048576 bytes") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
}
