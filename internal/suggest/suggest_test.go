package suggest

import (
	"reflect"
	"testing"
)

func TestNearest(t *testing.T) {
	known := []string{"naive", "escape", "context_ignoring", "context_flooding", "combined", "fake_completion"}
	tests := []struct {
		in   string
		want []string
	}{
		{"contxt_ignoring", []string{"context_ignoring", "context_flooding"}},
		{"naiv", []string{"naive"}},
		{"ESCAPE", []string{"escape"}},
		{"zzzz", nil},
		{"fake", []string{"fake_completion"}},
	}
	for _, tt := range tests {
		if got := Nearest(tt.in, known); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Nearest(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := Hint("naiv", known); got != " (did you mean naive?)" {
		t.Errorf("Hint = %q", got)
	}
	if got := Hint("zzzz", known); got != "" {
		t.Errorf("Hint = %q", got)
	}
}
