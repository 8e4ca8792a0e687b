package result_test

import (
	"strings"
	"testing"

	"github.com/pikit-go/pikit/result"
)

// TestDecodeVerdictAgreement: a line whose success flag and outcome say
// different things is refused; one without an outcome, or without a
// success flag, is judged by the one it has.
func TestDecodeVerdictAgreement(t *testing.T) {
	const name = `"key":"k","attack":"naive",`
	tests := []struct {
		name, line string
		refused    bool
	}{
		{"success true, outcome refused", `{` + name + `"success":true,"outcome":"refused"}`, true},
		{"success false, outcome full_success", `{` + name + `"success":false,"outcome":"full_success"}`, true},
		{"outcome before success", `{` + name + `"outcome":"sink_attempted","success":false}`, true},
		{"success true, outcome runtime_error", `{` + name + `"outcome":"runtime_error","success":true}`, true},
		{"success true, outcome not_judged", `{` + name + `"outcome":"not_judged","success":true}`, true},
		{"success true, outcome full_success", `{` + name + `"success":true,"outcome":"full_success"}`, false},
		{"success true, outcome sink_attempted", `{` + name + `"success":true,"outcome":"sink_attempted"}`, false},
		{"success false, outcome partial_compliance", `{` + name + `"success":false,"outcome":"partial_compliance"}`, false},
		{"no outcome (the Python pikit's)", `{` + name + `"success":true}`, false},
		{"empty outcome, success the verdict", `{` + name + `"outcome":"","success":true}`, false},
		{"outcome alone", `{` + name + `"outcome":"full_success"}`, false},
		{"a repeat-summary row (no cell): the Python pikit's default outcome", `{` + name + `"success":true,"outcome":"not_reached","signals":["repeat_summary"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d result.Decoder
			var b result.Brief
			err := d.Decode([]byte(tt.line), &b)
			switch {
			case tt.refused && (err == nil || !strings.Contains(err.Error(), "disagree")):
				t.Errorf("Decode(%s) = %v, want the disagreement refused", tt.line, err)
			case !tt.refused && err != nil:
				t.Errorf("Decode(%s) = %v, want it read", tt.line, err)
			}
		})
	}
}
