package channel

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "unicode_hidden",
		Description: "encodes the payload in invisible Unicode (zero-width characters or tag characters) inside otherwise unchanged text",
		Options: []method.Option{
			{
				Name:    "scheme",
				Help:    "zero_width: the payload's UTF-8 bits as U+200B/U+200C between U+2062 and U+2063 markers; unicode_tags: each ASCII character as its U+E0000 tag twin (ASCII payloads only)",
				Default: "zero_width",
				Choices: []string{"zero_width", "unicode_tags"},
			},
			{
				Name:    "position",
				Help:    "where the invisible run goes: before the text, at the word break nearest its middle, or after it",
				Default: "end",
				Choices: []string{"start", "middle", "end"},
			},
		},
	}, func(o options) (Channel, error) {
		return unicodeHidden{scheme: o["scheme"], position: o["position"]}, nil
	})
	RegisterSample("text", plainSample)
}

// The zero-width scheme: a start marker, eight bits per payload byte (most
// significant first), an end marker.
const (
	zwStart = '\u2062' // INVISIBLE TIMES
	zwEnd   = '\u2063' // INVISIBLE SEPARATOR
	zwZero  = '\u200B' // ZERO WIDTH SPACE
	zwOne   = '\u200C' // ZERO WIDTH NON-JOINER
	tagBase = 0xE0000  // tag characters: U+E0000 + an ASCII code
)

// unicodeHidden hides a payload as invisible code points.
type unicodeHidden struct{ scheme, position string }

var (
	_ Channel    = unicodeHidden{}
	_ Sampler    = unicodeHidden{}
	_ FileWriter = unicodeHidden{}
)

// Sample returns a clean paragraph of prose.
func (unicodeHidden) Sample() string { return plainSample }

// Taint inserts the encoded payload; the visible text is unchanged, and
// StripHidden(out) == data. At the end, the run goes before the final line
// break so it stays on the last line. The tag scheme can carry ASCII only: a payload
// with other characters is an error (use the zero_width scheme for it).
func (u unicodeHidden) Taint(data, payload string) (string, error) {
	var hidden string
	if u.scheme == "unicode_tags" {
		var b strings.Builder
		for i := 0; i < len(payload); i++ {
			c := payload[i]
			if c >= 0x7f {
				r, _ := utf8.DecodeRuneInString(payload[i:])
				return "", fmt.Errorf("scheme unicode_tags carries only ASCII, but the payload has %q at byte %d; use scheme zero_width", r, i)
			}
			b.WriteRune(rune(tagBase + int(c)))
		}
		hidden = b.String()
	} else {
		var b strings.Builder
		b.WriteRune(zwStart)
		for i := 0; i < len(payload); i++ {
			for bit := 7; bit >= 0; bit-- {
				if payload[i]>>bit&1 == 1 {
					b.WriteRune(zwOne)
				} else {
					b.WriteRune(zwZero)
				}
			}
		}
		b.WriteRune(zwEnd)
		hidden = b.String()
	}
	at := len(strings.TrimRight(data, "\r\n")) // end: on the last line, before the final line break
	switch u.position {
	case "start":
		at = 0
	case "middle":
		at = middleBreak(data)
	}
	return data[:at] + hidden + data[at:], nil
}

// middleBreak returns the byte offset just after the whitespace nearest the
// middle of s, or the rune boundary nearest the middle when s has no
// whitespace.
func middleBreak(s string) int {
	mid := len(s) / 2
	best := -1
	for i, r := range s {
		if unicode.IsSpace(r) {
			j := i + utf8.RuneLen(r)
			if best < 0 || abs(j-mid) < abs(best-mid) {
				best = j
			}
		}
	}
	if best >= 0 {
		return best
	}
	return len(textcut.Prefix(s, mid))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// isHidden reports whether r is a code point one of the schemes writes.
func isHidden(r rune) bool {
	return r == zwStart || r == zwEnd || r == zwZero || r == zwOne || (r >= tagBase && r < tagBase+0x80)
}

// StripHidden removes the invisible code points the unicode_hidden channel
// writes, giving back the visible text.
func StripHidden(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isHidden(r) {
			b.WriteString(s[i : i+n]) // invalid bytes are kept as they are
		}
		i += n
	}
	return b.String()
}

// Decode recovers a payload hidden by the unicode_hidden channel in either
// scheme. It reports false when s holds no complete hidden payload.
func Decode(s string) (payload string, ok bool) {
	if i := strings.IndexRune(s, zwStart); i >= 0 {
		rest := s[i+utf8.RuneLen(zwStart):]
		j := strings.IndexRune(rest, zwEnd)
		if j < 0 {
			return "", false
		}
		var bits []byte
		var cur byte
		n := 0
		for _, r := range rest[:j] {
			switch r {
			case zwZero:
				cur <<= 1
			case zwOne:
				cur = cur<<1 | 1
			default:
				return "", false
			}
			if n++; n%8 == 0 {
				bits = append(bits, cur)
				cur = 0
			}
		}
		if n%8 != 0 {
			return "", false
		}
		return string(bits), true
	}
	var b strings.Builder
	for _, r := range s {
		if r >= tagBase && r < tagBase+0x7f {
			b.WriteByte(byte(r - tagBase))
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}

// TaintFile writes note.txt (UTF-8).
func (u unicodeHidden) TaintFile(dir, data, payload string) (string, error) {
	out, err := u.Taint(orSample(data, plainSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "note.txt", out)
}

const plainSample = `The community garden on Alder Street opens for the season on the first Saturday of April.
Plots are 3 by 6 metres and cost 40 a year, water included; returning gardeners keep their plot
if they renew by 15 March. New applicants are placed on the waiting list in the order their forms
arrive, and the committee offers any unclaimed plots at the opening work day. Tools in the shed
are shared: please clean them and hang them back on their hooks, and log anything broken in the
notebook by the door so it can be repaired before the next weekend.
`
