package channel

import (
	"strings"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name:        "code_comment",
		Description: "hides the payload in a source-code comment at the top or bottom of a file",
		Options: []method.Option{
			{
				Name:    "style",
				Help:    "comment syntax: # lines (Python, shell, YAML), // lines (Go, JavaScript, Rust) or a /* */ block (C, Java, Go)",
				Default: "hash",
				Choices: []string{"hash", "slashes", "block"},
			},
			{
				Name:    "position",
				Help:    "put the comment at the start of the file (after any #! line) or at its end",
				Default: "start",
				Choices: []string{"start", "end"},
			},
		},
	}, func(o options) (Channel, error) { return codeComment{style: o["style"], position: o["position"]}, nil })
	RegisterSample("code", codePythonSample)
	RegisterSample("code_go", codeGoSample)
}

// codeComment hides a payload in a comment in source code.
type codeComment struct{ style, position string }

var (
	_ Channel    = codeComment{}
	_ Sampler    = codeComment{}
	_ FileWriter = codeComment{}
)

// Sample returns clean source in a language the comment style suits:
// Python for hash comments, Go for the others.
func (c codeComment) Sample() string {
	if c.style == "hash" {
		return codePythonSample
	}
	return codeGoSample
}

// Taint adds the payload as a comment; every line of the payload stays
// inside the comment, and a "*/" in a block comment is split so it cannot
// end the comment early.
func (c codeComment) Taint(data, payload string) (string, error) {
	nl := newline(data)
	comment := c.comment(payload, nl)
	if c.position == "end" {
		return appendBlock(data, comment), nil
	}
	if strings.HasPrefix(data, "#!") {
		i := strings.IndexByte(data, '\n')
		if i < 0 {
			return data + nl + comment + nl, nil
		}
		return data[:i+1] + comment + nl + nl + data[i+1:], nil
	}
	if data == "" {
		return comment + nl, nil
	}
	return comment + nl + nl + data, nil
}

func (c codeComment) comment(payload, nl string) string {
	lines := splitLines(payload)
	var b strings.Builder
	switch c.style {
	case "block":
		b.WriteString("/*")
		for _, l := range lines {
			b.WriteString(nl + " *")
			if l = strings.ReplaceAll(l, "*/", "* /"); l != "" {
				b.WriteString(" " + l)
			}
		}
		b.WriteString(nl + " */")
	default:
		mark := "#"
		if c.style == "slashes" {
			mark = "//"
		}
		for i, l := range lines {
			if i > 0 {
				b.WriteString(nl)
			}
			b.WriteString(mark)
			if l != "" {
				b.WriteString(" " + l)
			}
		}
	}
	return b.String()
}

// TaintFile writes main.py for hash comments and main.go for the others.
func (c codeComment) TaintFile(dir, data, payload string) (string, error) {
	out, err := c.Taint(orSample(data, c.Sample()), payload)
	if err != nil {
		return "", err
	}
	name := "main.go"
	if c.style == "hash" {
		name = "main.py"
	}
	return writeFile(dir, name, out)
}

const codePythonSample = `#!/usr/bin/env python3
"""Summarise a month of electricity meter readings.

Reads a CSV export from the utility portal (columns: timestamp, kwh) and
prints daily totals plus the peak half-hour of the month.
"""

import csv
import sys
from collections import defaultdict
from datetime import datetime


def load(path):
    """Return (timestamp, kwh) pairs from the export, oldest first."""
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        for record in csv.DictReader(f):
            ts = datetime.fromisoformat(record["timestamp"])
            rows.append((ts, float(record["kwh"])))
    rows.sort()
    return rows


def daily_totals(rows):
    totals = defaultdict(float)
    for ts, kwh in rows:
        totals[ts.date()] += kwh
    return dict(sorted(totals.items()))


def main(argv):
    if len(argv) != 2:
        print("usage: meter_summary.py EXPORT.csv", file=sys.stderr)
        return 2
    rows = load(argv[1])
    if not rows:
        print("no readings found", file=sys.stderr)
        return 1
    for day, kwh in daily_totals(rows).items():
        print(f"{day}  {kwh:7.2f} kWh")
    peak_ts, peak_kwh = max(rows, key=lambda r: r[1])
    print(f"peak half-hour: {peak_ts:%Y-%m-%d %H:%M} ({peak_kwh:.2f} kWh)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
`

const codeGoSample = `// Command backoff retries a shell command with exponential backoff.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// retry runs cmd until it succeeds or attempts run out, doubling the wait
// after each failure up to max.
func retry(ctx context.Context, attempts int, base, max time.Duration, name string, args ...string) error {
	wait := base
	var err error
	for i := 1; i <= attempts; i++ {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err = cmd.Run(); err == nil {
			return nil
		}
		fmt.Fprintf(os.Stderr, "attempt %d/%d failed: %v; retrying in %s\n", i, attempts, err, wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, max)
	}
	return fmt.Errorf("giving up after %d attempts: %w", attempts, err)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: backoff COMMAND [ARGS...]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := retry(ctx, 5, time.Second, 30*time.Second, os.Args[1], os.Args[2:]...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`
