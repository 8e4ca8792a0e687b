package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPseudoCommit(t *testing.T) {
	for v, want := range map[string]string{
		"v0.0.0-20261208010212-458e5a7c1f2b":              "458e5a7c1f2b",
		"v1.2.4-0.20261208010212-458e5a7c1f2b":            "458e5a7c1f2b",
		"v0.0.0-20261208010212-458e5a7c1f2b+incompatible": "458e5a7c1f2b",
		"v1.2.3":                              "",
		"v1.2.3-rc.1":                         "",
		"dev":                                 "",
		"v0.0.0-20261208010212-458E5A7C1F2B":  "",
		"v0.0.0-20261208010212-458e5a7c1f2b0": "",
	} {
		if got := pseudoCommit(v); got != want {
			t.Errorf("pseudoCommit(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	defer func(v, c, d string) { Version, Commit, Date = v, c, d }(Version, Commit, Date)
	Version, Commit, Date = "v1.2.3", "458e5a7c1f2b3d4e5f60718293a4b5c6d7e8f901", "2026-12-08T01:02:03Z"
	r := run(t, "version")
	for _, want := range []string{"pikit v1.2.3 (go", "commit:      458e5a7c1f2b3d4e5f60718293a4b5c6d7e8f901", "built:       2026-12-08T01:02:03Z"} {
		if r.code != 0 || !strings.Contains(r.out, want) {
			t.Errorf("pikit version: exit %d, want %q in\n%s", r.code, want, r.out)
		}
	}
	r = run(t, "version", "--json")
	var got buildInfo
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || r.code != 0 {
		t.Fatalf("pikit version --json: exit %d, %v\n%s", r.code, err, r.out)
	}
	if got.Version != "v1.2.3" || got.Commit != Commit || got.BuildDate != Date || got.Go == "" || got.Platform == "" {
		t.Errorf("pikit version --json = %+v", got)
	}
}
