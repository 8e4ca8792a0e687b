package defense

import (
	"os"
	"strings"
	"testing"
)

// BenignCorpus is benignCorpus for the external test package.
var BenignCorpus = benignCorpus

// benignCorpus reads testdata/benign.txt: ordinary texts separated by
// blank lines.
func benignCorpus(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/benign.txt")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, s := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		if s = strings.TrimSpace(s); s != "" {
			texts = append(texts, s)
		}
	}
	return texts
}
