package target

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const key = "sk-live-abcdefghijklmnop0123"
	tests := []struct {
		name    string
		in      string
		secrets []string
		want    string
	}{
		{"value", "bad key " + key + " given", []string{key}, "bad key [REDACTED] given"},
		{"url-escaped value", "GET /x?k=" + "a%2Bb%2Fcdefgh", []string{"a+b/cdefgh"}, "GET /x?k=[REDACTED]"},
		{"short secret left to patterns", "abc and abc", []string{"abc"}, "abc and abc"},
		{"bearer header", "Authorization: Bearer tok-123456", nil, "Authorization: Bearer [REDACTED]"},
		{"x-api-key header", "X-Api-Key: ant-key-42\r\nAccept: */*", nil, "X-Api-Key: [REDACTED]\r\nAccept: */*"},
		{"printed http.Header", "map[Authorization:[Bearer tok-1] X-Api-Key:[k-2] Accept:[*/*]]", nil, "map[Authorization:[Bearer [REDACTED]] X-Api-Key:[[REDACTED]] Accept:[*/*]]"},
		{"JSON header map", `{"Authorization":["Bearer tok-1"],"X-Api-Key":["k-2"]}`, nil, `{"Authorization":["Bearer [REDACTED]"],"X-Api-Key":["[REDACTED]"]}`},
		{"query parameters", `Post "https://h.example/v1/x?api_key=s1&model=m&key=s2&access_token=s3": refused`, nil, `Post "https://h.example/v1/x?api_key=[REDACTED]&model=m&key=[REDACTED]&access_token=[REDACTED]": refused`},
		{"env assignment", "line 3: OPENAI_API_KEY=abc123 ANTHROPIC_API_KEY: 'zz9'", nil, "line 3: OPENAI_API_KEY=[REDACTED] ANTHROPIC_API_KEY: '[REDACTED]'"},
		{"URL password", `Post "https://bob:hunter2-pw@proxy.example/v1": EOF`, nil, `Post "https://bob:[REDACTED]@proxy.example/v1": EOF`},
		{"provider key format", "used sk-proj-AAAAbbbbCCCCdddd1234 today", nil, "used [REDACTED] today"},
		{"already redacted", "Authorization: Bearer " + key, []string{key}, "Authorization: Bearer [REDACTED]"},
		{"ordinary text kept", "max_tokens: 5; set OPENAI_API_KEY in the environment; prompt_tokens=3", nil, "max_tokens: 5; set OPENAI_API_KEY in the environment; prompt_tokens=3"},
		{"empty", "", []string{key}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.in, tt.secrets...); got != tt.want {
				t.Errorf("Redact(%q) =\n %q\nwant\n %q", tt.in, got, tt.want)
			}
		})
	}
}

// wireEchoHeaders answers every request with an error whose body quotes the
// request back: its URL, its headers printed and as JSON, and a dump.
func wireEchoHeaders(status int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		hdr, _ := json.Marshal(r.Header)
		dump, _ := httputil.DumpRequest(r, false)
		msg := fmt.Sprintf("you sent %s %s with headers %v / %s / dump %s", r.Method, r.URL.String(), r.Header, hdr, dump)
		body, _ := json.Marshal(map[string]any{
			"type":  "error",
			"error": map[string]any{"type": "invalid_request_error", "message": msg},
		})
		wireWriteJSON(w, status, body)
	}
}

// TestErrorsNeverShowKeys has the server echo the request headers and URL
// in its error body, for both providers and for errors retried and not,
// and checks the key appears in no rendering of the error.
func TestErrorsNeverShowKeys(t *testing.T) {
	const querySecret = "qsecret-9876543210"
	for _, p := range wireProviders {
		for _, status := range []int{http.StatusBadRequest, http.StatusInternalServerError, http.StatusUnauthorized} {
			t.Run(fmt.Sprintf("%s/%d", p.name, status), func(t *testing.T) {
				srv := newWireServer(t, wireEchoHeaders(status))
				base := srv.URL
				if p.name == "openai" {
					base += "/v1"
				}
				tg := p.open(t, srv, Options{OptBaseURL: base + "?api_key=" + querySecret})
				clock := newWireClock()
				policy := wirePolicy(clock)
				policy.MaxRetries = 1
				_, err := WithRetry(tg, policy).Chat(context.Background(), wireHi)
				if err == nil {
					t.Fatal("Chat succeeded")
				}
				reqs := srv.Requests()
				key := testOpenAIKey
				if p.name == "anthropic" {
					key = testAnthropicKey
				}
				// The test is only meaningful if the server saw the secrets.
				if !strings.Contains(reqs[0].Header.Get("Authorization"), key) {
					t.Fatalf("server did not get the key: %v", reqs[0].Header)
				}
				sentQuery := strings.Contains(reqs[0].Query, querySecret)
				for _, text := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err), fmt.Sprintf("%q", err)} {
					if strings.Contains(text, key) {
						t.Errorf("error shows the API key: %s", text)
					}
					if strings.Contains(text, querySecret) {
						t.Errorf("error shows the query secret: %s", text)
					}
				}
				if !strings.Contains(err.Error(), Redacted) || !strings.Contains(err.Error(), "you sent POST") {
					t.Errorf("error %q lost the server's message", err)
				}
				t.Logf("query secret sent: %v; error: %s", sentQuery, err)
			})
		}
	}
}

// TestConnectionErrorsNeverShowKeys covers errors without a response,
// whose text the transport writes with the request URL in it.
func TestConnectionErrorsNeverShowKeys(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	const querySecret = "qsecret-0123456789"
	for _, spec := range []string{"openai:gpt-test", "anthropic:claude-test"} {
		t.Run(spec, func(t *testing.T) {
			t.Setenv(OpenAIKeyEnv, testOpenAIKey)
			t.Setenv(AnthropicKeyEnv, testAnthropicKey)
			tg, err := Open(spec, Options{OptBaseURL: "http://" + addr + "/v1?key=" + querySecret})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tg.Chat(context.Background(), wireHi)
			if err == nil {
				t.Fatal("Chat succeeded")
			}
			for _, secret := range []string{testOpenAIKey, testAnthropicKey, querySecret} {
				if strings.Contains(fmt.Sprintf("%+v %#v", err, err), secret) {
					t.Errorf("error shows %s: %v", secret, err)
				}
			}
			t.Logf("error: %v", err)
		})
	}
}
