package tomlpos

import "testing"

func TestBuild(t *testing.T) {
	doc := []byte(`# comment
task = "x"

[matrix]
attacks = [
  "naive",
  "escape",
]
sink_args = { to = "a@b" }

[[cases]]
id = "c1"

[[cases]]
id = "c2"
specs = [{ name = "naive", kwargs = { separator = "-" } }]
`)
	idx := Build(doc)
	for path, want := range map[string]int{
		"task":                             2,
		"matrix":                           4,
		"matrix.attacks":                   5,
		"matrix.attacks.1":                 7,
		"matrix.sink_args.to":              9,
		"cases.0.id":                       12,
		"cases.1":                          14,
		"cases.1.id":                       15,
		"cases.1.specs.0.kwargs.separator": 16,
		"cases.1.nosuch":                   14,
	} {
		if got := idx.Line(path); got != want {
			t.Errorf("Line(%q) = %d, want %d", path, got, want)
		}
	}
}
