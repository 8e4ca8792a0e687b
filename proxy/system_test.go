package proxy

import (
	"net/http"
	"testing"
)

// TestSystemRecorded: the first system prompt the agent sends, in any of
// the forms its API takes, is the trace's System.
func TestSystemRecorded(t *testing.T) {
	user := map[string]any{"role": "user", "content": userText}
	for _, tc := range []struct {
		name, path string
		bodies     []map[string]any // sent in order
		want       string
	}{
		{"chat system", "/v1/chat/completions", []map[string]any{
			{"model": "m", "messages": []any{map[string]any{"role": "system", "content": "Be brief."}, user}},
		}, "Be brief."},
		{"chat developer parts", "/v1/chat/completions", []map[string]any{
			{"model": "m", "messages": []any{map[string]any{"role": "developer", "content": []any{
				map[string]any{"type": "text", "text": "Be brief."}, map[string]any{"type": "text", "text": "Be kind."}}}, user}},
		}, "Be brief.\nBe kind."},
		{"chat two system messages", "/v1/chat/completions", []map[string]any{
			{"model": "m", "messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "system", "content": "Be kind."}, user}},
		}, "Be brief.\n\nBe kind."},
		{"the first request without one", "/v1/chat/completions", []map[string]any{
			{"model": "m", "messages": []any{user}},
			{"model": "m", "messages": []any{map[string]any{"role": "system", "content": "Be brief."}, user}},
		}, "Be brief."},
		{"the first one kept", "/v1/chat/completions", []map[string]any{
			{"model": "m", "messages": []any{map[string]any{"role": "system", "content": "Be brief."}, user}},
			{"model": "m", "messages": []any{map[string]any{"role": "system", "content": "Something else."}, user}},
		}, "Be brief."},
		{"responses instructions", "/v1/responses", []map[string]any{
			{"model": "m", "instructions": "Be brief.", "input": []any{user}},
		}, "Be brief."},
		{"responses developer item", "/v1/responses", []map[string]any{
			{"model": "m", "input": []any{map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "Be brief."}}}, user}},
		}, "Be brief."},
		{"anthropic string", "/v1/messages", []map[string]any{
			{"model": "m", "system": "Be brief.", "messages": []any{user}},
		}, "Be brief."},
		{"anthropic blocks", "/v1/messages", []map[string]any{
			{"model": "m", "system": []any{map[string]any{"type": "text", "text": "Be brief.", "cache_control": map[string]any{"type": "ephemeral"}}}, "messages": []any{user}},
		}, "Be brief."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newProxy(t, "")
			s := mustOpen(t, srv, "sys", offlineDrive(), sinkRules())
			f := formatFor(http.MethodPost, tc.path)
			for _, b := range tc.bodies {
				if _, _, err := s.rewrite(f, mustJSON(b), ""); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.Trace().System; got != tc.want {
				t.Errorf("System %q, want %q", got, tc.want)
			}
		})
	}
}
