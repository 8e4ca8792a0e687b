package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is two bytes: not split
		{"héllo", 3, "hé"},
		{"日本語", 4, "日"},
		{"日本語", 2, ""},
		{"abc", 0, ""},
		{"", 3, ""},
	}
	for _, tt := range tests {
		got := Prefix(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Prefix(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	if got := Clip("héllo", 2, "…"); got != "h…" {
		t.Errorf("Clip = %q", got)
	}
	if got := Clip("hi", 2, "…"); got != "hi" {
		t.Errorf("Clip of a short text = %q", got)
	}
}
