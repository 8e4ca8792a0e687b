package result

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSkipValue: the skipper accepts what encoding/json accepts and refuses
// broken structure.
func TestSkipValue(t *testing.T) {
	for _, v := range []string{
		`"a"`, `"a\"b"`, `"a\\"`, `"\\\\\""`, `{}`, `[]`, `{"a":[1,-2.5e+3,0,true,false,null,{"b":"}"}]}`,
		`[ 1 , "]" , [ ] ]`, `-0.1`, `"\u00e9"`,
	} {
		end, err := skipValue([]byte(v+" "), 0, 0)
		if err != nil || end != len(v) || !json.Valid([]byte(v)) {
			t.Errorf("skipValue(%s) = %d, %v; want %d", v, end, err, len(v))
		}
	}
	for _, v := range []string{
		`{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{a:1}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":tru}`, `{"a":1]`, `[}`, `{"a":"b" "c":1}`,
	} {
		if _, err := skipValue([]byte(v+" "), 0, 0); err == nil {
			t.Errorf("skipValue(%s) accepted it", v)
		}
	}
	for _, v := range []string{`"abc`, `{"a":`, `[1,2`, `{"a":"x\"`, `tr`} {
		if _, err := skipValue([]byte(v), 0, 0); err != ErrTruncated {
			t.Errorf("skipValue(%s): %v, want ErrTruncated", v, err)
		}
	}
}

// FuzzSkipValue: skipValue accepts every JSON value encoding/json accepts,
// and refuses what it refuses except inside strings, whose contents it
// does not check; it never panics.
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c\"d"}],"e":null}`, `[true,false,-1.5e3]`, `"x\\"`, `{"a":`, `01`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A space ends a number that would otherwise end the text.
		text := append(b[:len(b):len(b)], ' ')
		end, err := skipValue(text, skipSpace(text, 0), 0)
		if err == nil && end > len(text) {
			t.Fatalf("end %d past %d", end, len(text))
		}
		ok := err == nil && skipSpace(text, end) == len(text)
		valid := json.Valid(b)
		if valid && !ok {
			t.Fatalf("skipValue refused valid JSON %q: %d, %v", b, end, err)
		}
		if ok && !valid && !bytes.ContainsAny(b, "\\\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f") {
			t.Fatalf("skipValue accepted invalid JSON %q", b)
		}
	})
}
