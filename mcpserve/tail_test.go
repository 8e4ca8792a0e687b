package mcpserve

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/target"
)

func TestRedactor(t *testing.T) {
	secrets := []string{"sk-live-0123456789abcdef", "key with space/slash"}
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name string
		in   string
	}{
		{"no secret", "hello\nworld\n"},
		{"one line", "the key is sk-live-0123456789abcdef, keep it\n"},
		{"no newline", "sk-live-0123456789abcdefsk-live-0123456789abcdef"},
		{"escaped forms", "url?k=key+with+space%2Fslash and path key%20with%20space%2Fslash\n"},
		{"long lines", long + "sk-live-0123456789abcdef" + long + "\n" + long},
		{"partial at the end", "only a prefix: sk-live-0123"},
	}
	want := func(s string) string { return target.NewValueRedactor(secrets...).Redact(s) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every cut of the input into two writes, and one byte a write.
			var cuts [][]string
			for i := 0; i <= len(tt.in); i += max(1, len(tt.in)/200) {
				cuts = append(cuts, []string{tt.in[:i], tt.in[i:]})
			}
			cuts = append(cuts, strings.Split(tt.in, ""))
			for _, writes := range cuts {
				var out bytes.Buffer
				r := newRedactor(&out, secrets)
				for _, w := range writes {
					if n, err := r.Write([]byte(w)); n != len(w) || err != nil {
						t.Fatalf("Write = %d, %v", n, err)
					}
				}
				r.Flush()
				if got := out.String(); got != want(tt.in) {
					t.Fatalf("written in %d parts (first %d bytes): got %q, want %q", len(writes), len(writes[0]), clipped(got), clipped(want(tt.in)))
				}
			}
		})
	}
}

func TestRedactorHoldsLittle(t *testing.T) {
	var out bytes.Buffer
	r := newRedactor(&out, []string{"sk-live-0123456789abcdef"})
	r.Write([]byte("a line\nand the start of the next"))
	if got := out.String(); got != "a line\n" && !strings.HasPrefix(got, "a line\nand") {
		t.Errorf("a whole line was held back: %q", got)
	}
	r.Write([]byte(strings.Repeat("y", 10000)))
	if held := len("a line\nand the start of the next") + 10000 - out.Len(); held > 3*len("sk-live-0123456789abcdef") {
		t.Errorf("%d bytes held back", held)
	}
}

func clipped(s string) string {
	if len(s) > 200 {
		return s[:100] + "…" + s[len(s)-100:]
	}
	return s
}
