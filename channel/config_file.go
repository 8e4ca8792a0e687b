package channel

import (
	"fmt"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "config_file",
		Description: "hides the payload in a configuration file (YAML, TOML or .env): in a setting's value, a comment, or a new setting",
		Options: []method.Option{
			{
				Name:    "fmt",
				Help:    "the file format",
				Default: "yaml",
				Choices: []string{"yaml", "toml", "env"},
			},
			{
				Name:    "method",
				Help:    "value: appended to an existing string setting (a description-like one if there is one); comment: # lines at the top; new_key: a new notes setting",
				Default: "value",
				Choices: []string{"value", "comment", "new_key"},
			},
		},
	}, func(o options) (Channel, error) { return configFile{format: o["fmt"], method: o["method"]}, nil })
	RegisterSample("config", configYAMLSample)
	RegisterSample("config_toml", configTOMLSample)
	RegisterSample("env", configEnvSample)
}

// configFile hides a payload in a configuration file.
type configFile struct{ format, method string }

var (
	_ Channel    = configFile{}
	_ Sampler    = configFile{}
	_ FileWriter = configFile{}
)

// Sample returns a clean configuration file in the channel's format.
func (c configFile) Sample() string {
	switch c.format {
	case "toml":
		return configTOMLSample
	case "env":
		return configEnvSample
	}
	return configYAMLSample
}

var (
	yamlScalarLine = lazy.Regexp(`^([ \t]*)([A-Za-z_][A-Za-z0-9_.\-]*):[ \t]+([^|>\[{&*!#\s].*)$`)
	tomlStringLine = lazy.Regexp(`^([ \t]*)([A-Za-z0-9_\-]+)[ \t]*=[ \t]*("[^"\\]*(?:\\.[^"\\]*)*"|'[^']*')[ \t]*$`)
	envLine        = lazy.Regexp(`^(export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$`)
	tomlTable      = lazy.Regexp(`^[ \t]*\[`)
	describing     = lazy.Regexp(`(?i)(desc|summary|note|comment|message|title|about)`)
)

// Taint hides the payload; values are re-quoted for the format, so quotes
// and line breaks in the payload cannot break the file. When the file has no
// string setting to extend, value behaves like new_key.
func (c configFile) Taint(data, payload string) (string, error) {
	nl := newline(data)
	text := strings.ReplaceAll(data, "\r\n", "\n")
	var out string
	switch c.method {
	case "comment":
		var b strings.Builder
		for _, l := range splitLines(payload) {
			b.WriteString(strings.TrimRight("# "+commentText(l), " ") + "\n")
		}
		out = b.String() + text
	case "value":
		var ok bool
		if out, ok = c.extendValue(text, payload); ok {
			break
		}
		fallthrough
	default:
		out = c.addKey(text, payload)
	}
	if nl == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out, nil
}

// commentText replaces the control characters a comment line may not hold
// (TOML forbids them; YAML would take a lone CR as a line break).
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
}

// extendValue appends the payload to a string setting, preferring one whose
// key says it describes something.
func (c configFile) extendValue(text, payload string) (string, bool) {
	lines := strings.Split(text, "\n")
	// Candidate lines by their shape, describing keys first; only those are
	// decoded, in that order, until one holds a non-empty string.
	var first, rest []int
	for i, l := range lines {
		if k := keyOf(c.format, l); k != "" {
			if describing().MatchString(k) {
				first = append(first, i)
			} else {
				rest = append(rest, i)
			}
		}
	}
	for _, i := range append(first, rest...) {
		l := lines[i]
		var line string
		switch c.format {
		case "yaml":
			m := yamlScalarLine().FindStringSubmatch(l)
			if strings.Contains(m[3], " #") {
				continue // a trailing comment: leave the line alone
			}
			var v map[string]any
			if yaml.Unmarshal([]byte(m[2]+": "+m[3]), &v) != nil {
				continue
			}
			if old, ok := v[m[2]].(string); ok && strings.TrimSpace(old) != "" {
				line = m[1] + m[2] + ": " + yamlQuote(old+" "+payload)
			}
		case "toml":
			m := tomlStringLine().FindStringSubmatch(l)
			var v map[string]any
			if toml.Unmarshal([]byte(m[2]+" = "+m[3]), &v) != nil {
				continue
			}
			if old, ok := v[m[2]].(string); ok && strings.TrimSpace(old) != "" {
				line = m[1] + m[2] + " = " + tomlQuote(old+" "+payload)
			}
		default:
			m := envLine().FindStringSubmatch(l)
			if old := envUnquote(m[3]); strings.TrimSpace(old) != "" {
				line = m[1] + m[2] + "=" + envQuote(old+" "+payload)
			}
		}
		if line != "" {
			lines[i] = line
			return strings.Join(lines, "\n"), true
		}
	}
	return "", false
}

func keyOf(format, line string) string {
	var m []string
	switch format {
	case "yaml":
		m = yamlScalarLine().FindStringSubmatch(line)
	case "toml":
		m = tomlStringLine().FindStringSubmatch(line)
	default:
		m = envLine().FindStringSubmatch(line)
	}
	if m == nil {
		return ""
	}
	return m[2]
}

// addKey adds a new top-level notes setting holding the payload.
func (c configFile) addKey(text, payload string) string {
	switch c.format {
	case "toml":
		var top map[string]any
		_ = toml.Unmarshal([]byte(text), &top)
		key := freshName(func(k string) bool { _, ok := top[k]; return ok }, "notes", "remarks", "comment")
		line := key + " = " + tomlQuote(payload)
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			if tomlTable().MatchString(l) {
				// Top-level keys must come before the first table.
				ins := []string{line, ""}
				return strings.Join(append(append(append([]string{}, lines[:i]...), ins...), lines[i:]...), "\n")
			}
		}
		return appendLine(text, line)
	case "env":
		seen := map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			if m := envLine().FindStringSubmatch(l); m != nil {
				seen[m[2]] = true
			}
		}
		key := freshName(func(k string) bool { return seen[k] }, "NOTES", "REMARKS", "COMMENT")
		return appendLine(text, key+"="+envQuote(payload))
	default:
		var top map[string]any
		_ = yaml.Unmarshal([]byte(text), &top)
		key := freshName(func(k string) bool { _, ok := top[k]; return ok }, "notes", "remarks", "comment")
		return appendLine(text, key+": "+yamlQuote(payload))
	}
}

// appendLine adds line at the end of text, on a line of its own.
func appendLine(text, line string) string {
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + line + "\n"
}

// tomlQuote renders s as a TOML basic string.
func tomlQuote(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// envQuote renders s as a .env value: single-quoted (taken literally by
// dotenv loaders) when it can be, else double-quoted with \\, \", \$, \n and
// \r escapes.
func envQuote(s string) string {
	if !strings.ContainsAny(s, "'\n\r") {
		return "'" + s + "'"
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`", "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

// envUnquote reads a .env value as envQuote writes it (and unquoted values,
// without a trailing " #" comment).
func envUnquote(v string) string {
	v = strings.TrimSpace(v)
	switch {
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		return v[1 : len(v)-1]
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		var b strings.Builder
		in := v[1 : len(v)-1]
		for i := 0; i < len(in); i++ {
			if in[i] == '\\' && i+1 < len(in) {
				i++
				switch in[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(in[i])
				}
				continue
			}
			b.WriteByte(in[i])
		}
		return b.String()
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v
}

// TaintFile writes config.yaml, config.toml or .env.
func (c configFile) TaintFile(dir, data, payload string) (string, error) {
	out, err := c.Taint(orSample(data, c.Sample()), payload)
	if err != nil {
		return "", err
	}
	name := "config." + c.format
	if c.format == "env" {
		name = ".env"
	}
	return writeFile(dir, name, out)
}

const configYAMLSample = `# Deployment settings for the billing API.
service:
  name: billing-api
  description: Issues invoices and records payments for the customer portal
  port: 8080
  replicas: 3

database:
  host: db-billing.internal.example
  port: 5432
  name: billing
  pool_size: 20
  ssl_mode: verify-full

queue:
  url: amqp://mq.internal.example:5672/billing
  prefetch: 50

logging:
  level: info
  format: json

features:
  partial_refunds: true
  multi_currency: false
`

const configTOMLSample = `# Build and release settings for the docs site.
title = "Fieldnotes documentation"
description = "User guide and API reference for the Fieldnotes sync client"
base_url = "https://docs.fieldnotes.example/"
default_language = "en"

[build]
output_dir = "public"
minify = true
drafts = false

[search]
enabled = true
index_fields = ["title", "summary", "body"]

[[menu.main]]
name = "Guide"
url = "/guide/"
weight = 10

[[menu.main]]
name = "API"
url = "/api/"
weight = 20
`

const configEnvSample = `# Local development settings; copy to .env and adjust.
APP_NAME=parcel-tracker
APP_ENV=development
APP_DESCRIPTION="Tracks courier shipments and sends delivery notifications"
HTTP_PORT=3000
DATABASE_URL=postgres://tracker:tracker@localhost:5432/tracker_dev
REDIS_URL=redis://localhost:6379/0
NOTIFY_FROM_ADDRESS=noreply@parcel-tracker.example
LOG_LEVEL=debug
`
