package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\nwith a tab\t.", "plain text\nwith a tab\t."},
		{"héllo wörld ✓ 👩‍💻", "héllo wörld ✓ 👩‍💻"},
		{"\x1b[2J\x1b[Hgone", `\x1b[2J\x1b[Hgone`},
		{"\x1b]52;c;ZXZpbA==\x07", `\x1b]52;c;ZXZpbA==\x07`},
		{"visible\rhidden", `visible\rhidden`},
		{"abc\b\b\bxyz\x7f", `abc\x08\x08\x08xyz\x7f`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"raw byte \x9b31m", `raw byte \x9b31m`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"isolate \u2066x\u2069", `isolate \u2066x\u2069`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"line\u2028sep", `line\u2028sep`},
		{"real \ufffd stays", "real \ufffd stays"},
		{"kept\nlines\tand tabs \x1b beside", "kept\nlines\tand tabs \\x1b beside"},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLine(t *testing.T) {
	if got, want := Line("a\nb\tc\x1b"), `a\nb\tc\x1b`; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	if got := Line("just text"); got != "just text" {
		t.Errorf("Line changed clean text: %q", got)
	}
}

// TestWriterSplitRunes writes text one byte at a time: characters split
// across writes come out whole, and escapes are the same as String's.
func TestWriterSplitRunes(t *testing.T) {
	in := "ünïcode ✓ \u202e and \x1b[31m red 👩‍💻 \xff end é"
	var out bytes.Buffer
	w := NewWriter(&out)
	for i := 0; i < len(in); i++ {
		if n, err := w.Write([]byte{in[i]}); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), String(in); got != want {
		t.Errorf("byte-wise writes = %q, want %q", got, want)
	}
	// A character that never completes is escaped by Flush.
	out.Reset()
	w.Write([]byte("end \xe2\x80"))
	w.Flush()
	if got, want := out.String(), `end \xe2\x80`; got != want {
		t.Errorf("incomplete tail = %q, want %q", got, want)
	}
}

// TestWriterKeepsJSON: JSON passed through the writer decodes to the same
// values, with no raw control or bidi character left.
func TestWriterKeepsJSON(t *testing.T) {
	v := map[string]string{"final_text": "\x1b]0;pwned\x07 \u009b2J \u202eevil \\\u202e \u2028 ok"}
	b, _ := json.Marshal(v)
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write(b)
	w.Flush()
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("not JSON after escaping: %v\n%s", err, out.Bytes())
	}
	if back["final_text"] != v["final_text"] {
		t.Errorf("value changed: %q, want %q", back["final_text"], v["final_text"])
	}
	for _, r := range out.String() {
		if Unsafe(r) {
			t.Errorf("raw %U left in %q", r, out.String())
		}
	}
	if strings.ContainsRune(out.String(), 0x1b) {
		t.Error("ESC left")
	}
}

func BenchmarkStringClean(b *testing.B) {
	s := strings.Repeat("An ordinary model answer, with ünïcode. ", 50)
	for b.Loop() {
		String(s)
	}
}
