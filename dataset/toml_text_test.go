package dataset

import (
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// Every hostile character is escaped, and the string reads back the same.
func TestQuoteEscapesHostileText(t *testing.T) {
	for _, s := range []string{
		"plain", `a "quoted" \ back`, "line\nbreak\ttab\rcr",
		"bidi \u202e override \u2066 isolate \u200f mark", "zero\u200bwidth \ufeff bom \u2028 sep",
		"esc \x1b[2J bell \a nul \x00 del \x7f c1 \u009b", "tag \U000E0041 plane", "emoji 👩\u200d💻 ok",
	} {
		q := Quote(s)
		for _, r := range q {
			if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || strings.ContainsRune("\u202e\u2066\u200f\u200b\ufeff\u2028\U000E0041", r)) {
				t.Errorf("Quote(%q) holds %U raw: %s", s, r, q)
			}
		}
		var back struct{ V string }
		if err := toml.Unmarshal([]byte("V = "+q), &back); err != nil || back.V != s {
			t.Errorf("Quote(%q) = %s reads back %q (%v)", s, q, back.V, err)
		}
	}
}
