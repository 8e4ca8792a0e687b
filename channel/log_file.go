package channel

import (
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "log_file",
		Description: "hides the payload as a log entry, formatted like the lines around it",
		Options: []method.Option{
			{
				Name:    "level",
				Help:    "the entry's log level",
				Default: "info",
				Choices: []string{"info", "warn", "error", "debug"},
			},
			{
				Name:    "position",
				Help:    "insert the entry halfway through the log or append it as the latest entry",
				Default: "middle",
				Choices: []string{"middle", "end"},
			},
		},
	}, func(o options) (Channel, error) { return logFile{level: o["level"], position: o["position"]}, nil })
	RegisterSample("log", logSample)
}

// logFile hides a payload as an entry in an application log.
type logFile struct{ level, position string }

var (
	_ Channel    = logFile{}
	_ Sampler    = logFile{}
	_ FileWriter = logFile{}
)

// Sample returns a clean service log.
func (logFile) Sample() string { return logSample }

// logLevel finds a level word in a log line; group 1 is the level itself.
var logLevel = lazy.Regexp(`\b(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|trace|debug|info|notice|warn|warning|error|fatal|critical|Trace|Debug|Info|Notice|Warn|Warning|Error|Fatal|Critical)\b`)

// logComponent matches what follows the level up to the message: closing
// brackets, padding, separators and an optional [component] or name: tag.
var logComponent = lazy.Regexp(`^[\]\)>]?[ \t:|-]*(\[[^\]]{1,40}\][ \t:]*|[A-Za-z0-9_.\-/]{1,40}:[ \t]+)?`)

// Taint inserts one entry. Its prefix (timestamp, level, component) is
// copied from the line before it, with the level replaced and written the
// same way (case, padding); a multi-line payload continues on lines indented
// with a tab, as stack traces are. A log with no recognisable entries gets a
// bare "LEVEL payload" line.
func (l logFile) Taint(data, payload string) (string, error) {
	nl := newline(data)
	text := strings.ReplaceAll(data, "\r\n", "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	// Entry lines are the non-blank lines that do not start with whitespace.
	var entries []int
	for i, ln := range lines {
		if ln != "" && ln[0] != ' ' && ln[0] != '\t' {
			entries = append(entries, i)
		}
	}
	at := len(lines) // insert before this line
	if l.position == "middle" && len(entries) >= 2 {
		at = entries[len(entries)/2]
	}
	template := ""
	for _, i := range entries {
		if i < at {
			template = lines[i]
		}
	}
	if template == "" && len(entries) > 0 {
		template = lines[entries[0]]
	}
	entry := logEntry(template, l.level) + indentLines(payload, "\t", "\n")
	out := append(append(append([]string{}, lines[:at]...), entry), lines[at:]...)
	result := strings.Join(out, "\n") + "\n"
	if nl == "\r\n" {
		result = strings.ReplaceAll(result, "\n", "\r\n")
	}
	return result, nil
}

// logEntry returns the prefix of a new entry modelled on template.
func logEntry(template, level string) string {
	word := strings.ToUpper(level)
	loc := logLevel().FindStringSubmatchIndex(template)
	if loc == nil || loc[0] > 64 {
		return word + " "
	}
	old := template[loc[2]:loc[3]]
	switch {
	case old == strings.ToLower(old):
		word = strings.ToLower(word)
	case old != strings.ToUpper(old):
		word = word[:1] + strings.ToLower(word[1:])
	}
	if strings.EqualFold(old, "warning") && level == "warn" {
		word += old[4:]
	}
	rest := template[loc[3]:]
	comp := rest[:logComponent().FindStringIndex(rest)[1]]
	// Keep the columns aligned: padding after the level absorbs the
	// difference in length between the old and the new level word.
	if pad := len(comp) - len(strings.TrimLeft(comp, " ")); pad > 0 {
		width := len(old) + pad
		comp = strings.Repeat(" ", max(1, width-len(word))) + strings.TrimLeft(comp, " ")
	}
	if comp == "" {
		comp = " "
	}
	return template[:loc[2]] + word + comp
}

// TaintFile writes app.log.
func (l logFile) TaintFile(dir, data, payload string) (string, error) {
	out, err := l.Taint(orSample(data, logSample), payload)
	if err != nil {
		return "", err
	}
	return writeFile(dir, "app.log", out)
}

const logSample = `2025-10-02T06:00:01.112Z INFO  [main] starting invoice-sync v2.7.3 (commit 4f1c9ad)
2025-10-02T06:00:01.140Z INFO  [config] loaded /etc/invoice-sync/config.yaml (3 sources, 2 targets)
2025-10-02T06:00:01.388Z DEBUG [db] connection pool ready: 8 idle, max 32
2025-10-02T06:00:02.005Z INFO  [scheduler] next run of job "ledger-export" at 06:15:00
2025-10-02T06:00:04.731Z INFO  [source.erp] fetched 412 invoices changed since 2025-10-01T06:00:00Z
2025-10-02T06:00:05.219Z WARN  [source.erp] invoice INV-88213 has no cost centre; defaulting to CC-000
2025-10-02T06:00:07.864Z INFO  [target.ledger] posted batch 1/3 (150 invoices) in 1.21s
2025-10-02T06:00:09.102Z INFO  [target.ledger] posted batch 2/3 (150 invoices) in 1.18s
2025-10-02T06:00:10.377Z ERROR [target.ledger] batch 3/3 rejected: HTTP 409 duplicate reference INV-88190
2025-10-02T06:00:10.378Z INFO  [target.ledger] retrying batch 3/3 without INV-88190
2025-10-02T06:00:11.540Z INFO  [target.ledger] posted batch 3/3 (111 invoices) in 1.16s
2025-10-02T06:00:11.552Z INFO  [main] sync finished: 411 posted, 1 skipped, 0 failed (10.44s)
`
