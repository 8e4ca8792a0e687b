// Package objstore keeps results in S3-compatible object storage: a
// sharded run writes each shard's results as parts uploaded while it runs
// (a killed process loses at most the last few seconds of finished cells)
// and, when the shard ends, as one object with a summary beside it; merge,
// report and gate read a prefix back as one stream of results, each cell
// once.
//
// Layout under a prefix (see Shard):
//
//	shard-3-of-8.jsonl                  the shard's results, each key once
//	shard-3-of-8.parts/000042-ID.jsonl  parts written since that object
//	shard-3-of-8.summary.json           written when the shard's run ended
package objstore

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scheme is the prefix of an object-storage location.
const Scheme = "s3://"

// URL is an s3:// location: a bucket and a key prefix, which is "" (the
// bucket's root) or ends in "/".
type URL struct {
	Bucket string
	Prefix string
}

// IsURL reports whether s names object storage rather than a file.
func IsURL(s string) bool {
	return len(s) >= len(Scheme) && strings.EqualFold(s[:len(Scheme)], Scheme)
}

// maxPrefix bounds a prefix: S3 keys are at most 1,024 bytes, and a shard's
// part names need room after it.
const maxPrefix = 900

// ParseURL reads s3://BUCKET/PREFIX/ (a trailing slash is added when
// missing). A prefix whose last segment names a results file
// (s3://b/x.jsonl) is refused: an s3:// output is a prefix of one object
// per shard.
func ParseURL(s string) (URL, error) {
	if !IsURL(s) {
		return URL{}, fmt.Errorf("%q: want s3://BUCKET/PREFIX/", s)
	}
	rest := s[len(Scheme):]
	bucket, prefix, _ := strings.Cut(rest, "/")
	if err := checkBucket(bucket); err != nil {
		return URL{}, fmt.Errorf("%s: %w", safe(s), err)
	}
	if !utf8.ValidString(prefix) || strings.ContainsFunc(prefix, func(r rune) bool { return unicode.IsControl(r) || r == '\\' }) {
		return URL{}, fmt.Errorf("%s: the prefix may not hold control characters, backslashes or invalid UTF-8", safe(s))
	}
	if strings.Contains("/"+prefix, "//") && prefix != "" {
		return URL{}, fmt.Errorf("%s: the prefix has an empty segment (//)", safe(s))
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		last := strings.ToLower(prefix[strings.LastIndexByte(prefix, '/')+1:])
		for _, ext := range []string{".jsonl", ".json", ".csv"} {
			if strings.HasSuffix(last, ext) {
				return URL{}, fmt.Errorf("%s: an s3:// location is a prefix (ending in /) that holds an object per shard, not one results file", safe(s))
			}
		}
		prefix += "/"
	}
	if len(prefix) > maxPrefix {
		return URL{}, fmt.Errorf("%s: the prefix is %d bytes long; at most %d", safe(s), len(prefix), maxPrefix)
	}
	return URL{Bucket: bucket, Prefix: prefix}, nil
}

// checkBucket accepts the names S3 and the stores that speak its API
// allow: 3 to 63 letters, digits, dots, hyphens and underscores.
func checkBucket(b string) error {
	if b == "" {
		return errors.New("no bucket name")
	}
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q: want 3 to 63 characters", b)
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("bucket name %q: only letters, digits, '.', '-' and '_'", safe(b))
		}
	}
	return nil
}

// String returns the location as s3://BUCKET/PREFIX.
func (u URL) String() string { return Scheme + u.Bucket + "/" + u.Prefix }

// Key returns the key of name under the prefix.
func (u URL) Key(name string) string { return u.Prefix + name }

// Of returns the s3:// address of a key.
func (u URL) Of(key string) string { return Scheme + u.Bucket + "/" + key }

// safe keeps a name from driving a terminal: control characters become
// '?'.
func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}
