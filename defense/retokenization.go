package defense

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pikit-go/pikit/method"
)

func init() {
	Register(method.Info{
		Name:        "retokenization",
		Description: "Splits long words into pieces, breaking up crafted token sequences.",
		Options: []method.Option{
			{Name: "min_len", Help: "words longer than this many letters are split (at least 2)." + pythonValueNote, Default: 10},
			{Name: "separator", Help: "what is put between the pieces of a split word", Default: "-"},
		},
	}, newRetokenization)
}

func newRetokenization(args method.Args) (Defense, error) {
	r := &retokenization{minLen: args.Int("min_len"), sep: args.String("separator")}
	if r.minLen < 2 {
		return nil, badOption("min_len", "%d is too small: want at least 2", r.minLen)
	}
	if r.sep == "" || strings.IndexFunc(r.sep, isWordRune) >= 0 {
		return nil, badOption("separator", "%q: want a non-empty separator without letters or digits", r.sep)
	}
	r.piece = (r.minLen + 1) / 2
	return r, nil
}

// retokenization splits every run of letters and digits longer than minLen
// into near-equal pieces of at most piece runes.
type retokenization struct {
	minLen int
	sep    string
	piece  int
}

var _ Defense = (*retokenization)(nil)

// Apply implements Defense. It adds a note only when it split a word.
func (r *retokenization) Apply(prompt, _ string) string {
	out, split := r.retokenize(prompt)
	if !split {
		return prompt
	}
	return paragraphs(
		"Long words in the text below have been split into pieces joined by "+strconv.Quote(r.sep)+". Read each split word as the whole word.",
		out)
}

func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.IsMark(c) }

// retokenize returns s with its long words split, and whether it split
// one. Text between long words is copied a run at a time, and ASCII is
// classified by a table: every tool result of a retokenization cell goes
// through here, and a rune-by-rune copy was most of its cost.
func (r *retokenization) retokenize(s string) (string, bool) {
	var b strings.Builder
	start := 0 // the text not yet copied
	for i := 0; i < len(s); {
		// The next word's start.
		if c := s[i]; c < utf8.RuneSelf {
			if !asciiWord[c] {
				i++
				continue
			}
		} else if c, size := utf8.DecodeRuneInString(s[i:]); !isWordRune(c) {
			i += size
			continue
		}
		// Its end, and its length in runes.
		j, n := i, 0
		for ; j < len(s); n++ {
			if c := s[j]; c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				j++
				continue
			}
			c, size := utf8.DecodeRuneInString(s[j:])
			if !isWordRune(c) {
				break
			}
			j += size
		}
		if n > r.minLen {
			if start == 0 {
				b.Grow(len(s) + len(s)/8)
			}
			b.WriteString(s[start:i])
			r.split(&b, s[i:j], n)
			start = j
		}
		i = j
	}
	if start == 0 {
		return s, false
	}
	b.WriteString(s[start:])
	return b.String(), true
}

// split writes word, of n runes, in near-equal pieces of at most r.piece
// runes, r.sep between them.
func (r *retokenization) split(b *strings.Builder, word string, n int) {
	pieces := (n + r.piece - 1) / r.piece
	for k := range pieces {
		// Piece k holds runes [k*n/pieces, (k+1)*n/pieces).
		size := (k+1)*n/pieces - k*n/pieces
		if k > 0 {
			b.WriteString(r.sep)
		}
		end := 0
		for range size {
			_, w := utf8.DecodeRuneInString(word[end:])
			end += w
		}
		b.WriteString(word[:end])
		word = word[end:]
	}
}

// asciiWord marks the ASCII bytes isWordRune accepts: letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range rune(utf8.RuneSelf) {
		t[c] = isWordRune(c)
	}
	return t
}()
